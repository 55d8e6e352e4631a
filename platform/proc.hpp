#pragma once
// Host inspection: answers "who holds this port / this file?" so errors can name the process to
// stop instead of leaving the user to run netstat, lsof or Resource Monitor. posix/proc.cpp reads
// /proc; windows/proc.cpp asks Toolhelp, the process's PEB (its command line),
// GetExtendedTcpTable (ports) and the Restart Manager (open files). Under Wine, the TCP table has
// no owner pids and the Restart Manager is a stub that finds no one: callers must not read "no
// one" as proof (docs/windows.md).
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

// What the OS says about a live process (Linux: /proc/<pid>/stat). start_time (Linux: field 22,
// clock ticks since boot; Windows: the creation time in 100 ns units since 1601) with the pid is an
// identity that survives pid reuse. Windows has no readable process group or session: both are 0.
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

// Processes that have `path` open right now (Linux: per /proc/*/fd; Windows: the Restart Manager).
std::vector<ProcessInfo> processes_with_open(const std::filesystem::path& path);

// "pid 123 (python3 train.py)" for each, joined by ", "; "an unknown process" when empty.
std::string describe(const std::vector<ProcessInfo>& procs);

}  // namespace ddp::proc

namespace ddp::proc {

// Whether process `pid` holds a TCP connection (not a listener) whose remote port is `port`.
bool connected_to_port(pid_t pid, std::uint16_t port);

// Raises RLIMIT_NOFILE's soft limit to its hard limit (servers with many clients); returns the
// soft limit now in force. Windows has no such limit on sockets: its per-process handle limit (2^24).
std::uint64_t raise_open_file_limit();

}  // namespace ddp::proc
