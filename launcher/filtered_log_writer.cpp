#include "launcher/filtered_log_writer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fstream>
#include <system_error>

namespace ddp::launcher {

FilteredLogWriter::FilteredLogWriter(std::filesystem::path run_dir, DuplicateFilters filters)
    : run_dir_(std::move(run_dir)), filters_(std::move(filters)) {}

FilteredLogWriter::~FilteredLogWriter() { finish(); }

void FilteredLogWriter::on_line(int attempt, bool is_stderr, std::string_view prefix, std::string_view line) {
  if (!filters_.matches(line, is_stderr)) return;
  std::string text;
  text.reserve(prefix.size() + line.size() + 1);
  text.append(prefix).append(line).push_back('\n');
  {
    std::lock_guard lock(mu_);
    if (done_) return;
    if (queued_bytes_ + text.size() > kMaxQueuedBytes) {
      ++dropped_;
      return;
    }
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
    queued_bytes_ += text.size();
    queue_.push_back({attempt, is_stderr, std::move(text)});
  }
  cv_.notify_one();
}

void FilteredLogWriter::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
    if (queue_.empty() && done_) break;
    std::deque<Entry> batch;
    batch.swap(queue_);
    queued_bytes_ = 0;
    lock.unlock();
    std::size_t failed = write(batch);
    lock.lock();
    failed_ += failed;
  }
}

std::size_t FilteredLogWriter::write(std::deque<Entry>& batch) {
  // One open file per stream, reopened when a new attempt's lines arrive. Appending: the loop
  // wipes an attempt's directory before its ranks start, so an old file is never continued.
  std::size_t failed = 0;
  for (auto& e : batch) {
    int i = e.is_stderr ? 1 : 0;
    if (attempt_of_[i] != e.attempt) {
      files_[i].close();
      auto path = run_dir_ / filtered_log_name(e.attempt, e.is_stderr);
      std::error_code ec;
      std::filesystem::create_directories(path.parent_path(), ec);
      files_[i].clear();
      files_[i].open(path, std::ios::binary | std::ios::app);
      attempt_of_[i] = e.attempt;
    }
    if (files_[i].is_open()) {
      files_[i].write(e.text.data(), static_cast<std::streamsize>(e.text.size()));
    } else {
      ++failed;
    }
  }
  for (auto& f : files_) f.flush();  // a reader (tail -f, a test) sees each batch at once
  return failed;
}

void FilteredLogWriter::finish() {
  {
    std::lock_guard lock(mu_);
    if (done_) return;
    done_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  if (dropped_) {
    spdlog::warn(
        "the disk was too slow for the filtered logs: {} matching lines dropped from {}/attempt_*/filtered_*.log",
        dropped_, run_dir_.string());
  }
  if (failed_) {
    spdlog::warn("{} matching lines could not be written under {} (check that the directory is writable)", failed_,
                 run_dir_.string());
  }
}

}  // namespace ddp::launcher
