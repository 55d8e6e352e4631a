#include "launcher/outputs/filtered_log_writer.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <string>

namespace ddp::launcher {

FilteredLogWriter::FilteredLogWriter(FileWriter& files, std::filesystem::path run_dir, DuplicateFilters filters)
    : files_(files), run_dir_(std::move(run_dir)), filters_(std::move(filters)) {}

void FilteredLogWriter::on_line(int attempt, bool is_stderr, std::string_view prefix, std::string_view line) {
  if (finished_ || !filters_.matches(line, is_stderr)) return;
  std::string text;
  text.reserve(prefix.size() + line.size() + 1);
  text.append(prefix).append(line).push_back('\n');
  // One file per stream, another when a new attempt's lines arrive. Appending: the loop wipes an
  // attempt's directory before its ranks start, so an old file is never continued.
  const int i = is_stderr ? 1 : 0;
  if (attempt_of_[i] != attempt) {
    if (file_[i]) files_.close(*file_[i]);
    file_[i] = files_.open(run_dir_ / filtered_log_name(attempt, is_stderr), FileWriter::Mode::Append);
    attempt_of_[i] = attempt;
    opened_.push_back(*file_[i]);
  }
  if (!files_.write(*file_[i], std::move(text), true)) ++dropped_;
}

void FilteredLogWriter::finish() {
  if (finished_) return;
  finished_ = true;
  std::size_t failed = 0;
  for (auto id : opened_) failed += files_.failed_writes(id);
  if (dropped_) {
    spdlog::warn(
        "the disk was too slow for the filtered logs: {} matching lines dropped from {}/attempt_*/filtered_*.log",
        dropped_, run_dir_.string());
  }
  if (failed) {
    spdlog::warn("{} matching lines could not be written under {} (check that the directory is writable)", failed,
                 run_dir_.string());
  }
}

}  // namespace ddp::launcher
