#pragma once
// Host inspection through /proc: answers "who holds this port / this file?" so errors can name
// the process to stop instead of leaving the user to run netstat or lsof.
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ddp::proc {

struct ProcessInfo {
  pid_t pid = 0;
  std::string cmdline;  // argv joined by spaces; "" if unreadable
};

// What /proc/<pid>/stat says about a live process. start_time (field 22, clock ticks since boot)
// with the pid is an identity that survives pid reuse.
struct ProcStat {
  pid_t ppid = 0;
  pid_t pgid = 0;
  pid_t sid = 0;
  std::uint64_t start_time = 0;
};

// nullopt when the process is gone, a zombie, or its stat unreadable.
std::optional<ProcStat> read_proc_stat(pid_t pid);

// The command line of `pid` (argv joined by spaces), or "" when it cannot be read.
std::string cmdline(pid_t pid);

// Processes that have a TCP socket in LISTEN state on `port` (IPv4 or IPv6, any address).
// Sockets whose owner is not visible (other users without privilege) are reported with pid 0.
std::vector<ProcessInfo> listeners_on_port(std::uint16_t port);

// Processes that have `path` open right now (per /proc/*/fd).
std::vector<ProcessInfo> processes_with_open(const std::filesystem::path& path);

// "pid 123 (python3 train.py)" for each, joined by ", "; "an unknown process" when empty.
std::string describe(const std::vector<ProcessInfo>& procs);

}  // namespace ddp::proc

namespace ddp::proc {

// Whether process `pid` holds a TCP connection (not a listener) whose remote port is `port`.
bool connected_to_port(pid_t pid, std::uint16_t port);

// Raises RLIMIT_NOFILE's soft limit to its hard limit (servers with many clients); returns the
// soft limit now in force.
std::uint64_t raise_open_file_limit();

}  // namespace ddp::proc
