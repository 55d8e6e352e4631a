#pragma once
// Worker cgroups: every attempt's ranks go into child cgroups of the supervisor's own, one per rank
// (<own>/ddp-launch-<run_id>-<pid>/attempt_<N>/rank_<local>), where the hierarchy is writable.
//  - cgroup v2: teardown writes cgroup.kill, which reaches what escaped the worker's process
//    group (a double-forked `setsid` daemon); the guardian does the same if the supervisor dies.
//  - memory (v2 memory controller, or the v1 memory hierarchy of a hybrid host): the rank's OOM-kill
//    count (memory.events / memory.oom_control), the evidence behind "killed by the OOM killer",
//    and the optional per-rank limit (--memory-limit-per-rank).
// Where nothing is writable (not root, no delegation, cgroup v1 only) the supervisor falls back to
// process groups alone; a debug line says why. The Windows build has none of this
// (cgroup_windows.cpp: no directories, no limit, no OOM evidence); its workers' Job Objects
// (platform/spawn.hpp) do what cgroup.kill does here.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "platform/native_handle.hpp"

namespace ddp::launcher {

// --- pure: text of /proc and cgroup files → values (unit-tested) ---

// The process's own cgroup per hierarchy, from /proc/self/cgroup ("0::/a/b", "4:memory:/x").
struct OwnCgroups {
  std::optional<std::string> v2;         // the "0::" line
  std::optional<std::string> v1_memory;  // the line whose controllers include "memory"
};
OwnCgroups parse_proc_cgroup(std::string_view text);

// A mounted hierarchy: its mount point and the hierarchy path mounted there ("/" unless a
// container bind-mounts a sub-tree).
struct CgroupMount {
  std::filesystem::path mountpoint;
  std::string root = "/";
  // The directory of hierarchy path `path` (as /proc/self/cgroup spells it), or nullopt when it
  // lies outside this mount.
  std::optional<std::filesystem::path> dir_of(std::string_view path) const;
};
// The cgroup2 hierarchy and the v1 memory hierarchy, from /proc/self/mountinfo.
struct CgroupMounts {
  std::optional<CgroupMount> v2;
  std::optional<CgroupMount> v1_memory;
};
CgroupMounts parse_mountinfo(std::string_view text);

// The "oom_kill N" count of a v2 memory.events or a v1 memory.oom_control file.
std::optional<std::uint64_t> parse_oom_kill_count(std::string_view text);

// Whether a kernel log record ("Out of memory: Killed process 123 (python3) ...", or the
// "oom-kill:...,pid=123,..." summary) says the OOM killer killed `pid`.
bool kernel_log_names_oom_kill(std::string_view record, pid_t pid);

// "64M", "1.5G", "1048576" (K/M/G/T are powers of 1024; a trailing B or iB is accepted) → bytes.
std::optional<std::uint64_t> parse_memory_size(std::string_view text);
// 67108864 → "64 MiB".
std::string format_memory_size(std::uint64_t bytes);

// --- the shell ---

class WorkerCgroups {
 public:
  // Creates this run's cgroup directories where writable; limit: bytes of RAM (+ swap) per rank.
  WorkerCgroups(std::string_view run_id, std::optional<std::uint64_t> memory_limit_per_rank);
  ~WorkerCgroups();  // kills and removes what is left
  WorkerCgroups(const WorkerCgroups&) = delete;
  WorkerCgroups& operator=(const WorkerCgroups&) = delete;

  // The v2 directory of this run (cgroup.kill reaches every attempt), or empty where unavailable.
  const std::filesystem::path& v2_dir() const { return v2_; }
  bool memory_accounting() const { return memory_ != Memory::None; }
  // Every directory of this run (v2 and v1 memory), for the guardian and processes.json.
  std::vector<std::filesystem::path> dirs() const;

  // Creates the rank's cgroups for `attempt` (limit set) and opens their cgroup.procs files
  // (O_CLOEXEC); the child writes "0" to each between fork and exec. Close them after the fork.
  std::vector<platform::NativeHandle> prepare_rank(int attempt, int local_rank);

  // cgroup.kill on the whole run (every rank of every attempt and everything they started).
  void kill_all();
  // Removes the cgroups of attempts whose processes are gone; waits up to `wait` for the last
  // ones to die (cgroup.events "populated 0", by poll, no sleep).
  void remove_attempts(std::chrono::milliseconds wait);

  // A SIGKILLed rank: does its memory cgroup count an OOM kill? What to say about it, or nullopt
  // when the count is 0 or unreadable (then `kernel_log_oom_kill(pid)` is the fallback).
  std::optional<std::string> oom_evidence(int attempt, int local_rank) const;

 private:
  enum class Memory { None, V2, V1 };
  std::filesystem::path rank_dir(const std::filesystem::path& base, int attempt, int local_rank) const;
  std::filesystem::path v2_;         // <mount><own>/ddp-launch-<run_id>-<pid>
  std::filesystem::path v1_memory_;  // the same under the v1 memory hierarchy (Memory::V1)
  Memory memory_ = Memory::None;
  std::optional<std::uint64_t> limit_;
  std::vector<int> attempts_;  // created, not yet removed
};

// A run's cgroup directories (WorkerCgroups::dirs(): from a dead supervisor's processes.json, or
// the guardian's at its exit): cgroup.kill where there is one, a wait of up to `wait` for the
// processes to die, then removal. Only directories named ddp-launch-* are touched. Returns whether
// any existed.
bool kill_and_remove_run_cgroups(const std::vector<std::filesystem::path>& dirs, std::chrono::milliseconds wait);

// The kernel log (/dev/kmsg, readable as root) names `pid` as an OOM-killer victim. False when the
// log is unreadable.
bool kernel_log_oom_kill(pid_t pid);

// Why a rank that died of `signal` was the OOM killer's: a SIGKILL counted by its memory cgroup, or
// (no memory cgroup) one the kernel log names; nullopt when there is no such evidence.
std::optional<std::string> oom_kill_evidence(const WorkerCgroups& cgroups, int attempt, int local_rank, pid_t pid,
                                             int signal);

}  // namespace ddp::launcher
