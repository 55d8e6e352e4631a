#pragma once
// The local executor: starts a job's `ddp-launch run` supervisor as a child in its own session
// (so it outlives a daemon crash and can be re-adopted), with its output in a file (never a pipe:
// a pipe would break when the daemon dies). Plus the /proc facts that re-adoption checks.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::jobs {

struct SpawnRequest {
  std::vector<std::string> argv;                     // argv[0] is an absolute path
  std::map<std::string, std::string> env_overrides;  // applied to the daemon's own environment
  std::filesystem::path workdir;                     // empty: the daemon's
  std::filesystem::path output_file;                 // stdout and stderr, appended
};

// posix_spawn with POSIX_SPAWN_SETSID; throws ddp::Error naming what failed.
pid_t spawn_supervisor(const SpawnRequest& request);

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or nullopt if gone.
std::optional<std::uint64_t> process_start_time(pid_t pid);

// pidfd_open(2): a descriptor that becomes readable when `pid` exits, child or not; -1 on error.
int open_pidfd(pid_t pid);

}  // namespace ddp::jobs
