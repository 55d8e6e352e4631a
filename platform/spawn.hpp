#pragma once
// spawn_process: start a program the way a supervisor starts its workers: in a group of its own
// that can be stopped as a whole, dying with us, its output where we say.
//
// POSIX, at a cost that does not grow with the supervisor's memory: fork() copies the parent's page
// tables (and exec tears the copy down again): with per-rank buffers in the parent, starting N ranks
// cost O(N²). Here the child shares the parent's memory until it execs (clone
// CLONE_VM|CLONE_VFORK, as glibc's posix_spawn), and does only system calls before the exec: what
// posix_spawn cannot (a parent-death signal, joining cgroups before anything runs) included. Its
// group is its own session (setsid); it dies with us by PR_SET_PDEATHSIG (its children by the
// guardian: containment.hpp).
//
// Windows: CreateProcess, suspended until it is in a Job Object of its own, then resumed; its group
// is a new console process group (CREATE_NEW_PROCESS_GROUP: Ctrl-Break reaches it alone) and the Job
// Object (everything it starts is in the job too). The job is made with
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE: only we hold its handle, so when we die, however we die, the
// kernel closes it and ends the worker and all its descendants; and with
// JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION, so a crashing worker ends instead of waiting on a
// Windows Error Reporting dialog. Only the handles named here are inherited
// (PROC_THREAD_ATTRIBUTE_HANDLE_LIST): another rank's pipe never leaks into a sibling.
#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "platform/native_handle.hpp"

namespace ddp {

struct SpawnRequest {
  std::string program;            // the file to execute (a path: no PATH search)
  std::vector<std::string> argv;  // argv[0] first (Windows: joined into one command line, quoted as the CRT parses it)
  std::vector<std::string> env;   // "NAME=value" each: the whole environment
  platform::NativeHandle stdout_fd = platform::kNoHandle;  // becomes the child's stdout (none: inherit ours)
  platform::NativeHandle stderr_fd = platform::kNoHandle;  // becomes the child's stderr (none: inherit ours)
  // POSIX only: descriptors of cgroup.procs files: "0" (itself) is written to each before the exec.
  std::vector<platform::NativeHandle> cgroup_procs;
  // CPUs the child may run on (POSIX: sched_setaffinity before the exec; Windows: the job's
  // affinity, CPUs 0..63); empty: inherited.
  std::vector<int> cpu_affinity;
  bool new_session = true;        // its own group (POSIX: setsid(); Windows: a new console process group)
  bool die_with_parent = true;    // POSIX: PR_SET_PDEATHSIG SIGKILL, exits 127 at once if the parent is gone
                                  // already; Windows: the job's KILL_ON_JOB_CLOSE
  std::filesystem::path workdir;  // where it starts (POSIX: chdir before the exec); empty: ours
  // Windows: a console of its own without a window (CREATE_NO_WINDOW), not ours: closing our console
  // does not reach it (what new_session's setsid gives on POSIX). POSIX: nothing more to do.
  bool own_console = false;
};

// A started child: its pid and, on Windows, its process and Job Object handles (closing the last
// handle of a KILL_ON_JOB_CLOSE job ends what runs in it). Move-only.
class Child {
 public:
  struct Native;  // the platform's handles; opaque

  Child() = default;
  Child(pid_t pid, std::shared_ptr<Native> native) : pid_(pid), native_(std::move(native)) {}
  Child(Child&&) noexcept = default;  // move-only: one owner of a child
  Child& operator=(Child&&) noexcept = default;
  ~Child() = default;

  pid_t pid() const { return pid_; }
  explicit operator bool() const { return pid_ > 0; }
  const std::shared_ptr<Native>& native() const { return native_; }

  // Sends `signo` (platform/signal_numbers.hpp) to the child's whole group. POSIX: kill(-pgid,
  // signo) (the group is its session: new_session). Windows: SIGKILL ends the Job Object (the child
  // and everything it started, TerminateJobObject); SIGTERM, SIGINT and SIGHUP send Ctrl-Break to its
  // console process group (false when that cannot be done: no console shared with it, or Wine, which
  // does not implement Ctrl-Break events); any other signal: false.
  bool signal_group(int signo) const;

 private:
  pid_t pid_ = -1;
  std::shared_ptr<Native> native_;  // shared with platform/child_exits.hpp's wait
};

struct SpawnResult {
  Child child;
  std::string what;   // the step that failed, e.g. "execve", "CreateProcess"
  std::string error;  // why, in words (the child, if any, was reaped)
  bool ok() const { return static_cast<bool>(child); }
};

// stdin is the null device. POSIX: in the child, caught signals and SIGPIPE are reset to their
// defaults and the signal mask is cleared; other ignored signals stay ignored (as across fork and exec).
SpawnResult spawn_process(const SpawnRequest& request);

}  // namespace ddp
