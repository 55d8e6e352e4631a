#pragma once
// spawn_process: start a program the way a supervisor starts its workers, at a cost that does not
// grow with the supervisor's memory. fork() copies the parent's page tables (and exec tears the
// copy down again): with per-rank buffers in the parent, starting N ranks cost O(N²). Here the
// child shares the parent's memory until it execs (clone CLONE_VM|CLONE_VFORK, as glibc's
// posix_spawn), and does only system calls before the exec: what posix_spawn cannot (a parent-death
// signal, joining cgroups before anything runs) included.
#include <sys/types.h>

#include <string>
#include <vector>

namespace ddp {

struct SpawnRequest {
  std::string program;            // the file to execute (a path: no PATH search)
  std::vector<std::string> argv;  // argv[0] first
  std::vector<std::string> env;   // "NAME=value" each: the whole environment
  int stdout_fd = -1;             // becomes the child's stdout (-1: inherit ours)
  int stderr_fd = -1;             // becomes the child's stderr (-1: inherit ours)
  // Descriptors of cgroup.procs files: "0" (itself) is written to each before the exec.
  std::vector<int> cgroup_procs;
  // CPUs the child may run on (sched_setaffinity before the exec); empty: inherited.
  std::vector<int> cpu_affinity;
  bool new_session = true;      // setsid(): its own session and process group
  bool die_with_parent = true;  // PR_SET_PDEATHSIG SIGKILL; exits 127 at once if the parent is gone already
};

struct SpawnResult {
  pid_t pid = -1;
  int error = 0;     // errno of the step that failed (the child was reaped)
  std::string what;  // that step, e.g. "execve"
  bool ok() const { return pid > 0; }
};

// stdin is /dev/null. In the child, caught signals and SIGPIPE are reset to their defaults and the
// signal mask is cleared; other ignored signals stay ignored (as across fork and exec).
SpawnResult spawn_process(const SpawnRequest& request);

}  // namespace ddp
