#include "launcher/supervisor/spawner.hpp"

#include <fmt/format.h>

#include <string>

#include "common/error.hpp"
#include "platform/pipe.hpp"

namespace ddp::launcher {
namespace {

void close_all(const std::vector<platform::NativeHandle>& handles) {
  for (auto h : handles) platform::close_handle(h);
}

}  // namespace

RankProcess spawn_rank(int rank, const WorkerLaunch& launch, std::vector<platform::NativeHandle> cgroup_procs,
                       std::vector<int> cpu_affinity) {
  std::string error;
  auto pipes = platform::make_output_pipes(error);
  if (!pipes) {
    close_all(cgroup_procs);
    throw Error(
        fmt::format("cannot start rank {}: no pipe for its output ({}); raise the open files limit "
                    "(ulimit -n) or start fewer ranks (--nproc-per-node)",
                    rank, error));
  }
  SpawnRequest req;
  req.program = launch.argv[0];
  req.argv = launch.argv;
  req.env.reserve(launch.env.size());
  for (const auto& [k, v] : launch.env) req.env.push_back(k + "=" + v);
  req.stdout_fd = pipes->out.write;
  req.stderr_fd = pipes->err.write;
  req.cgroup_procs = std::move(cgroup_procs);
  req.cpu_affinity = std::move(cpu_affinity);  // --numa-binding
  auto started = spawn_process(req);
  close_all(req.cgroup_procs);
  platform::close_handle(pipes->out.write);
  platform::close_handle(pipes->err.write);
  if (!started.ok()) {
    platform::close_handle(pipes->out.read);
    platform::close_handle(pipes->err.read);
    throw Error(fmt::format("cannot start rank {}: {} ({}: {}): {}", rank, launch.argv[0], started.what, started.error,
                            "check the program path, or pass --python/--no-python"));
  }
  return RankProcess{std::move(started.child), pipes->out.read, pipes->err.read};
}

RankExit rank_exit(const platform::ChildExit& x) {
  RankExit r;
  r.local_rank = x.tag;
  r.pid = x.pid;
  r.time = x.time;
  r.exit_code = x.exit_code;
  r.signal = x.signal;
  return r;
}

}  // namespace ddp::launcher
