#pragma once
// LogFollower: one rank's log of a job, read as it grows and across restarts (the supervisor's
// next attempt and the daemon's next run write to a new file): `ddp-launch logs -f` (the API's
// follow=1) and the dashboard's live log tail. File growth comes from the daemon's file watch
// (platform/file_watch.hpp), on the loop.
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>

#include "jobs/job_manager.hpp"

namespace ddp::jobs {

class LogFollower {
 public:
  // on_growth runs on the loop when the file being read was written to.
  LogFollower(JobManager& jobs, JobId id, std::string rank, std::string stream, std::function<void()> on_growth);
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  // The first file is read from its last `bytes` on (at the start of a line), not from its start.
  void start_at_tail(std::size_t bytes) { tail_ = bytes; }
  // At most max_bytes not read yet; "" when there is nothing new. At the end of a file whose rank
  // has a newer one (a restart), moves to it and returns the line "[ddp-launch]: the job restarted;
  // following PATH".
  std::string next(std::size_t max_bytes);
  // Stops watching the file. Not in a destructor: the loop may outlive the JobManager at shutdown.
  void close();

 private:
  void open(const std::filesystem::path& p);
  JobManager& jobs_;
  JobId id_;
  std::string rank_, stream_;
  std::function<void()> on_growth_;
  std::optional<std::size_t> tail_;
  std::optional<int> watch_;
  std::ifstream file_;
  std::filesystem::path path_;
};

}  // namespace ddp::jobs
