#pragma once
// The guardian: a tiny process forked before the supervisor starts anything, in its own session,
// deaf to terminal signals. The supervisor tells it every worker process group it creates; when
// the supervisor dies for any reason — SIGKILL and the OOM killer included — the guardian's pipe
// reaches EOF and it SIGKILLs those groups, grandchildren (a child `sleep`, DataLoader workers)
// included. PDEATHSIG alone only reaches the workers themselves. Given the run's cgroup directories,
// it also writes cgroup.kill (which reaches what left its process group: a `setsid` daemon) and
// removes them; and a temporary run directory it was told about.
#include <sys/types.h>

#include <filesystem>
#include <vector>

namespace ddp::launcher {

class Guardian {
 public:
  // Forks the guardian. Call while the process is still single-threaded.
  static Guardian start(const std::vector<std::filesystem::path>& cgroup_dirs = {});
  Guardian() = default;
  Guardian(Guardian&& other) noexcept;
  Guardian& operator=(Guardian&& other) noexcept;
  Guardian(const Guardian&) = delete;
  Guardian& operator=(const Guardian&) = delete;
  ~Guardian();

  void watch(pid_t pgid);    // a new worker process group
  void forget(pid_t pgid);   // swept: the id may be reused by others
  // A directory to remove if the supervisor dies without finish() (its temporary run directory:
  // nobody could find it again, since its name holds the dead supervisor's pid).
  void remove_on_death(const std::filesystem::path& dir);
  // Asks the guardian to kill what is left and exit, and waits for it (a clean supervisor exit).
  void finish();
  pid_t pid() const { return pid_; }

 private:
  void send(char op, pid_t pgid);
  pid_t pid_ = -1;
  int fd_ = -1;  // write end of the pipe
};

}  // namespace ddp::launcher
