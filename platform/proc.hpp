#pragma once
// Host inspection: answers "who holds this port / this file?" so errors can name the process to
// stop instead of leaving the user to run netstat, lsof or Resource Monitor. posix/proc.cpp reads
// /proc; windows/proc.cpp asks Toolhelp, the process's PEB (its command line),
// GetExtendedTcpTable (ports), the Restart Manager (who has a file open) and the system's handle
// table (what a process has open). Under Wine, the TCP table has
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
// same_user: it runs as this process's user (Linux: its real uid is our real uid; Windows: its
// token's user is ours); a process of another user is never one of this run's to signal.
struct ProcStat {
  pid_t ppid = 0;
  pid_t pgid = 0;
  pid_t sid = 0;
  std::uint64_t start_time = 0;
  bool same_user = false;
};

// nullopt when the process is gone, a zombie, or its stat unreadable.
std::optional<ProcStat> read_proc_stat(pid_t pid);

// A process that cannot run until it is continued: stopped by a signal (SIGSTOP, SIGTSTP, SIGTTIN,
// SIGTTOU: Linux state T) or held by a tracer (a debugger; state t, or TracerPid set). Who sent a
// stop signal is recorded nowhere; a tracer is known. nullopt: running, sleeping, gone, or not known
// (Windows: not read).
struct StoppedProcess {
  bool traced = false;         // a tracer holds it (its stop is the tracer's)
  pid_t tracer = 0;            // the tracer's pid; 0 when none or unknown
  std::string tracer_cmdline;  // "" when unknown
};
std::optional<StoppedProcess> stopped(pid_t pid);

// Ends process `pid` (SIGKILL; Windows: TerminateProcess) when it still runs with this start time
// (read_proc_stat's) as this user: a pid the OS gave to another process since, or another user's
// process, is left alone. True when it was ended.
bool terminate_process(pid_t pid, std::uint64_t start_time);

// Why `pid` is an orphan — the process that started it is gone, as happens to the workers of a
// killed launcher — or nullopt when its parent lives or is unknown. POSIX: it was re-parented to
// init (pid 1). Windows: its recorded parent no longer runs, or that pid now belongs to a process
// younger than it (Windows keeps a dead parent's pid).
std::optional<std::string> orphaned(pid_t pid);

// The command line of `pid` (argv joined by spaces), or "" when it cannot be read.
std::string cmdline(pid_t pid);

// Processes that have a TCP socket in LISTEN state on `port` (IPv4 or IPv6, any address).
// Sockets whose owner is not visible (other users without privilege) are reported with pid 0.
std::vector<ProcessInfo> listeners_on_port(std::uint16_t port);

// Processes that have `path` open right now (Linux: per /proc/*/fd; Windows: the Restart Manager).
std::vector<ProcessInfo> processes_with_open(const std::filesystem::path& path);

// The regular files process `pid` has open right now (Linux: /proc/<pid>/fd, absolute paths),
// empty when it is gone or its fds cannot be read. Windows: the system's handle table (its rows of
// `pid`, copied with DuplicateHandle and named by GetFinalPathNameByHandleW; a process of another
// user, to one without privilege, gives nothing).
std::vector<std::filesystem::path> open_files(pid_t pid);

// What a process says about itself, to tell whether it names a file: its arguments, its
// environment ("NAME=value" each) and its working directory. Linux: /proc/<pid>/{cmdline,environ,cwd};
// Windows: the command line (split as the C runtime splits it), no environment, no directory.
struct ProcessTexts {
  pid_t pid = 0;
  std::vector<std::string> argv;
  std::vector<std::string> env;
  bool env_denied = false;    // its environment exists but could not be read (another user's)
  std::filesystem::path cwd;  // empty: unknown
};
// Every process this one can see, except those gone meanwhile, kernel threads and zombies.
std::vector<ProcessTexts> process_texts();

// The kernel's table of file locks (Linux: /proc/locks); nullopt where there is none to read (Windows).
std::optional<std::string> lock_table();

// "pid 123 (python3 train.py)" for each, joined by ", "; "an unknown process" when empty.
std::string describe(const std::vector<ProcessInfo>& procs);

}  // namespace ddp::proc

namespace ddp::proc {

// Whether process `pid` holds a TCP connection (not a listener) whose remote port is `port`.
bool connected_to_port(pid_t pid, std::uint16_t port);

// RLIMIT_NOFILE's soft and hard limits. nullopt with `why` empty where there is no such limit
// (Windows: sockets and files are handles, 2^24 per process); with `why` set when it cannot be read.
struct OpenFileLimit {
  std::uint64_t soft = 0;
  std::uint64_t hard = 0;
};
std::optional<OpenFileLimit> open_file_limit(std::string& why);

// Raises RLIMIT_NOFILE's soft limit to its hard limit (servers with many clients); returns the
// soft limit now in force. Windows has no such limit on sockets: its per-process handle limit (2^24).
std::uint64_t raise_open_file_limit();

}  // namespace ddp::proc
