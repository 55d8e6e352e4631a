#pragma once
// Containment: what takes every worker down — and everything it started — when the supervisor
// dies for any reason (SIGKILL, the OOM killer, TerminateProcess, `taskkill /F`).
//
// POSIX: the guardian, a tiny process forked before the supervisor starts anything, in its own
// session, deaf to terminal signals. The supervisor tells it every worker process group it creates;
// when the supervisor dies, the guardian's pipe reaches EOF and it SIGKILLs those groups,
// grandchildren (a child `sleep`, DataLoader workers) included. PDEATHSIG alone only reaches the
// workers themselves (spawn.hpp). `on_death` then runs in the guardian (the launcher's: cgroup.kill,
// which reaches what left its process group, and removing the run's cgroups), and it removes a
// temporary run directory it was told about.
//
// Windows: nothing to run. Each worker is in a Job Object of its own made with
// KILL_ON_JOB_CLOSE (spawn.hpp); only the supervisor holds the job's handle, so when it dies the
// kernel closes the handle and ends the job, grandchildren included. A temporary run directory is
// left behind then (no one remains to remove it).
#include <sys/types.h>

#include <filesystem>
#include <functional>

namespace ddp::platform {

class Containment {
 public:
  // POSIX: forks the guardian; call while the process is still single-threaded.
  static Containment start(std::function<void()> on_death = {});
  Containment() = default;
  Containment(Containment&& other) noexcept;
  Containment& operator=(Containment&& other) noexcept;
  Containment(const Containment&) = delete;
  Containment& operator=(const Containment&) = delete;
  ~Containment();

  void watch(pid_t pgid);   // a new worker process group (Windows: its job already does)
  void forget(pid_t pgid);  // swept: the id may be reused by others
  // A directory to remove if the supervisor dies without finish() (its temporary run directory:
  // nobody could find it again, since its name holds the dead supervisor's pid).
  void remove_on_death(const std::filesystem::path& dir);
  // Asks the guardian to kill what is left and exit, and waits for it (a clean supervisor exit).
  void finish();
  pid_t pid() const { return pid_; }  // the guardian's (0 on Windows: there is none)

 private:
  void send(char op, pid_t pgid);
  pid_t pid_ = 0;
  int fd_ = -1;  // write end of the pipe to the guardian
};

}  // namespace ddp::platform
