#include "jobs/log_follower.hpp"

#include <fmt/format.h>

namespace ddp::jobs {

LogFollower::LogFollower(JobManager& jobs, JobId id, std::string rank, std::string stream,
                         std::function<void()> on_growth)
    : jobs_(jobs), id_(id), rank_(std::move(rank)), stream_(std::move(stream)), on_growth_(std::move(on_growth)) {}

void LogFollower::open(const std::filesystem::path& p) {
  if (watch_) jobs_.file_watch().unwatch(*watch_);
  watch_.reset();
  file_.close();
  file_.clear();
  file_.open(p, std::ios::binary);
  path_ = p;
  watch_ = jobs_.file_watch().watch(p, [cb = on_growth_] { cb(); });
  if (!tail_ || !file_) return;
  // The tail: from the first line that starts within the last *tail_ bytes.
  file_.seekg(0, std::ios::end);
  auto size = static_cast<std::size_t>(file_.tellg());
  std::size_t from = size > *tail_ ? size - *tail_ : 0;
  file_.seekg(static_cast<std::streamoff>(from));
  if (from > 0) {
    std::string skipped;
    std::getline(file_, skipped);
    if (file_.eof()) {  // one line longer than the tail: show its end rather than nothing
      file_.clear();
      file_.seekg(static_cast<std::streamoff>(from));
    }
  }
  tail_.reset();
}

std::string LogFollower::next(std::size_t max_bytes) {
  if (!file_.is_open()) {
    if (auto p = jobs_.views().log_path(id_, rank_, stream_)) open(*p);
  }
  std::string chunk;
  if (file_.is_open()) {
    file_.clear();
    chunk.resize(max_bytes);
    file_.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    chunk.resize(static_cast<std::size_t>(file_.gcount()));
  }
  if (chunk.empty() && file_.is_open()) {
    // All of this file is read: a restart writes the rank's output to a new file from here on.
    auto p = jobs_.views().log_path(id_, rank_, stream_);
    if (p && *p != path_) {
      open(*p);
      chunk = fmt::format("[ddp-launch]: the job restarted; following {}\n", p->string());
    }
  }
  return chunk;
}

void LogFollower::close() {
  if (watch_) jobs_.file_watch().unwatch(*watch_);
  watch_.reset();
  file_.close();
}

}  // namespace ddp::jobs
