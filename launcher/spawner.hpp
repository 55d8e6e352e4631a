#pragma once
// Spawning and reaping the ranks' processes. A rank starts through common/spawn.hpp (clone-based,
// O(1) in our memory) in its own session and process group, its stdout and stderr on fresh pipes;
// the Reaper waits only for the ranks it was told about (the guardian is a child too, and not
// ours to reap) and hands each exit over as a RankExit.
#include <sys/types.h>

#include <functional>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

#include "launcher/supervisor_machine.hpp"
#include "launcher/worker_env.hpp"

namespace ddp::launcher {

// The started rank and the read ends of its output pipes (the caller owns them, O_CLOEXEC).
struct RankProcess {
  pid_t pid = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
};

// `cgroup_procs`: cgroup.procs descriptors the child joins (closed here); `cpu_affinity`: empty
// for inherited. Throws Error naming the rank and the fix when there is no pipe or no exec.
RankProcess spawn_rank(int rank, const WorkerLaunch& launch, std::vector<int> cgroup_procs,
                       std::vector<int> cpu_affinity);

// From waitpid's status.
RankExit rank_exit(int local_rank, pid_t pid, int status, double time);

class Reaper {
 public:
  void watch(pid_t pid, int local_rank);
  // Reaps every watched rank that exited; each exit goes to on_exit as soon as it is reaped, so the
  // peers' teardown goes out before the next wait. Ranks reaped in one pass share one time: they
  // arrived together, and root_cause.hpp decides between them by evidence, not by this order.
  void reap(const std::function<void(const RankExit&)>& on_exit);
  std::size_t watched() const { return by_pid_.size(); }

 private:
  void reaped(pid_t pid, int status, double now, const std::function<void(const RankExit&)>& on_exit);

  std::unordered_map<pid_t, int> by_pid_;         // pid → local rank: O(1) per exit
  std::set<std::pair<int, pid_t>> by_local_rank_;  // the scan's order: local rank order
};

}  // namespace ddp::launcher
