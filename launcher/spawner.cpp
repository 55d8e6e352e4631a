#include "launcher/spawner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/clock.hpp"
#include "common/error.hpp"
#include "platform/spawn.hpp"

namespace ddp::launcher {

RankProcess spawn_rank(int rank, const WorkerLaunch& launch, std::vector<int> cgroup_procs,
                       std::vector<int> cpu_affinity) {
  int out_fds[2] = {-1, -1};
  int err_fds[2] = {-1, -1};
  if (::pipe2(out_fds, O_CLOEXEC) != 0 || ::pipe2(err_fds, O_CLOEXEC) != 0) {
    const int error = errno;
    for (int fd : {out_fds[0], out_fds[1]}) {
      if (fd >= 0) ::close(fd);
    }
    for (int fd : cgroup_procs) ::close(fd);
    throw Error(
        fmt::format("cannot start rank {}: no pipe for its output ({}); raise the open files limit "
                    "(ulimit -n) or start fewer ranks (--nproc-per-node)",
                    rank, std::strerror(error)));
  }
  SpawnRequest req;
  req.program = launch.argv[0];
  req.argv = launch.argv;
  req.env.reserve(launch.env.size());
  for (const auto& [k, v] : launch.env) req.env.push_back(k + "=" + v);
  req.stdout_fd = out_fds[1];
  req.stderr_fd = err_fds[1];
  req.cgroup_procs = std::move(cgroup_procs);
  req.cpu_affinity = std::move(cpu_affinity);  // --numa-binding
  auto child = spawn_process(req);
  for (int fd : req.cgroup_procs) ::close(fd);
  ::close(out_fds[1]);
  ::close(err_fds[1]);
  if (!child.ok()) {
    ::close(out_fds[0]);
    ::close(err_fds[0]);
    throw Error(fmt::format("cannot start rank {}: {} ({}: {}): {}", rank, launch.argv[0], child.what,
                            std::strerror(child.error), "check the program path, or pass --python/--no-python"));
  }
  return RankProcess{child.pid, out_fds[0], err_fds[0]};
}

RankExit rank_exit(int local_rank, pid_t pid, int status, double time) {
  RankExit x;
  x.local_rank = local_rank;
  x.pid = pid;
  x.time = time;
  if (WIFEXITED(status)) x.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) x.signal = WTERMSIG(status);
  return x;
}

void Reaper::watch(pid_t pid, int local_rank) {
  by_pid_[pid] = local_rank;
  by_local_rank_.insert({local_rank, pid});
}

void Reaper::reap(const std::function<void(const RankExit&)>& on_exit) {
  const double now = now_seconds();
  // Which child exited, without reaping it (it may be the guardian): O(1) per exit. A child that is
  // not a rank ends the peeking; a scan of the ranks then reaps what the peek could not reach.
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
    if (by_pid_.count(info.si_pid) == 0) break;
    int status = 0;
    if (::waitpid(info.si_pid, &status, WNOHANG) != info.si_pid) break;  // never peek the same one twice
    reaped(info.si_pid, status, now, on_exit);
  }
  for (auto it = by_local_rank_.begin(); it != by_local_rank_.end();) {
    const pid_t pid = (it++)->second;  // reaped() erases the current entry
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) reaped(pid, status, now, on_exit);
  }
}

void Reaper::reaped(pid_t pid, int status, double now, const std::function<void(const RankExit&)>& on_exit) {
  const int local_rank = by_pid_.at(pid);
  by_pid_.erase(pid);
  by_local_rank_.erase({local_rank, pid});
  on_exit(rank_exit(local_rank, pid, status, now));
}

}  // namespace ddp::launcher
