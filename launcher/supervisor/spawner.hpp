#pragma once
// Spawning the ranks' processes: a rank starts through platform/spawn.hpp (POSIX: clone-based, O(1)
// in our memory, its own session; Windows: its own console process group and Job Object) with
// stdout and stderr on fresh pipes (platform/pipe.hpp). Their exits arrive through
// platform/child_exits.hpp; rank_exit puts one in the supervisor machine's terms.
#include <sys/types.h>

#include <vector>

#include "launcher/supervisor/supervisor_machine.hpp"
#include "launcher/workers/worker_env.hpp"
#include "platform/child_exits.hpp"
#include "platform/native_handle.hpp"
#include "platform/spawn.hpp"

namespace ddp::launcher {

// The started rank and the read ends of its output pipes (the caller owns them; not inherited).
struct RankProcess {
  Child child;
  platform::NativeHandle stdout_fd = platform::kNoHandle;
  platform::NativeHandle stderr_fd = platform::kNoHandle;
  pid_t pid() const { return child.pid(); }
};

// `cgroup_procs`: cgroup.procs descriptors the child joins (closed here; POSIX only); `cpu_affinity`:
// empty for inherited. Throws Error naming the rank and the fix when there is no pipe or no start.
RankProcess spawn_rank(int rank, const WorkerLaunch& launch, std::vector<platform::NativeHandle> cgroup_procs,
                       std::vector<int> cpu_affinity);

// A watched child's exit (its tag is the local rank) as the machine's RankExit.
RankExit rank_exit(const platform::ChildExit& x);

}  // namespace ddp::launcher
