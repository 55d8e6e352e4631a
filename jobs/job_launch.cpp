// JobSpec → what runs it: the `ddp-launch run` argv and environment of a local run, the sbatch
// script of a Slurm one.
#include <fmt/format.h>

#include <cmath>

#include "common/duration.hpp"
#include "common/env_contract.hpp"
#include "jobs/job_spec.hpp"

namespace ddp::jobs {

namespace {

// The `ddp-launch run` options every executor passes: the ranks, restarts, store and backend.
// The batch policy is `run`'s own (--global-batch / --per-rank-batch): the ranks see the same
// DDP_GLOBAL_BATCH, DDP_PER_RANK_BATCH and DDP_LR_SCALE as under `ddp-launch run`.
std::vector<std::string> group_options(const JobSpec& spec) {
  const auto& d = spec.distributed;
  std::vector<std::string> out = {
      "--nproc-per-node", std::to_string(spec.resources.nproc_per_node),
      "--max-restarts",   std::to_string(d.max_restarts),
      "--shutdown-grace", format_seconds(d.shutdown_grace_s),
      "--store",          d.store,
      "--backend",        d.backend,
  };
  // The hang watchdog: run's defaults (auto, restart) unless the job says otherwise.
  if (!d.hang_timeout.empty()) out.insert(out.end(), {"--hang-timeout", d.hang_timeout});
  if (!d.on_hang.empty()) out.insert(out.end(), {"--on-hang", d.on_hang});
  if (d.batch_policy == BatchPolicy::GlobalBatch)
    out.insert(out.end(), {"--global-batch", std::to_string(d.batch_size)});
  if (d.batch_policy == BatchPolicy::PerRankBatch) {
    out.insert(out.end(), {"--per-rank-batch", std::to_string(d.batch_size)});
  }
  return out;
}

}  // namespace

std::vector<std::string> launch_argv(const JobSpec& spec, const LaunchContext& ctx) {
  std::vector<std::string> argv = {ctx.self_exe, "run", "--nnodes", std::to_string(spec.resources.nodes)};
  auto group = group_options(spec);
  argv.insert(argv.end(), group.begin(), group.end());
  argv.insert(argv.end(), {
                              "--rdzv-id",
                              "job-" + ctx.job_id,
                              "--log-dir",
                              ctx.log_dir.string(),
                              // Ranks' output goes to their files only: the supervisor's own log stays readable.
                              "--redirects",
                              "3",
                              "--events",
                              ctx.events_path.string(),
                          });
  // The supervisor records them in its run directory's metrics.csv (`ddp-launch report`).
  for (const auto& [name, regex] : spec.metrics) argv.insert(argv.end(), {"--metric", name + "=" + regex});
  // No "--": `run` takes everything from the first positional on as the worker's argv.
  argv.push_back("--no-python");
  auto worker = spec.worker_argv();
  argv.insert(argv.end(), worker.begin(), worker.end());
  return argv;
}

std::string slurm_time(double seconds) {
  auto total = static_cast<long long>(std::ceil(seconds));
  return fmt::format("{}-{:02}:{:02}:{:02}", total / 86400, total % 86400 / 3600, total % 3600 / 60, total % 60);
}

launcher::SbatchScript slurm_batch_script(const JobSpec& spec, const LaunchContext& ctx, const std::string& output) {
  launcher::SbatchScript s;
  s.job_name = fmt::format("ddp-{}-{}", ctx.job_id, spec.name);
  s.nodes = std::to_string(spec.resources.nodes);
  s.output = output;
  if (spec.slurm.time_limit_s) s.time = slurm_time(*spec.slurm.time_limit_s);
  s.partition = spec.slurm.partition;
  s.account = spec.slurm.account;
  s.qos = spec.slurm.qos;
  s.chdir = spec.workdir;
  if (spec.resources.gpus_per_node > 0)
    s.extra.push_back(fmt::format("--gpus-per-node={}", spec.resources.gpus_per_node));
  s.extra.insert(s.extra.end(), spec.slurm.sbatch_args.begin(), spec.slurm.sbatch_args.end());
  s.launcher = ctx.self_exe;
  // Node count, node rank, store host and port, and the run id (the Slurm job id) come from
  // SLURM_* on every node. No --log-dir/--events: every node's supervisor would write the same
  // files; the ranks' [rank N]-prefixed output reaches the job's output file through srun.
  s.run_options = group_options(spec);
  s.run_options.push_back("--no-python");
  s.command = spec.worker_argv();
  s.env = launch_env(spec, ctx);
  // Slurm hands out the GPUs (CUDA_VISIBLE_DEVICES per node from its gres); never override them.
  s.env.erase(std::string(env::kCudaVisibleDevices));
  s.env.erase(std::string(env::kCudaDeviceOrder));
  return s;
}

std::map<std::string, std::string> launch_env(const JobSpec& spec, const LaunchContext& ctx) {
  std::map<std::string, std::string> env;
  env[std::string(env::kPythonUnbuffered)] = "1";  // or Python's output reaches the logs late
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::string gpus;
  for (int g : ctx.gpu_indices) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  // Always set: a job without GPUs must not see (and grab) the host's.
  env[std::string(env::kCudaVisibleDevices)] = gpus;
  if (!ctx.gpu_indices.empty()) env[std::string(env::kCudaDeviceOrder)] = "PCI_BUS_ID";  // NVML's numbering
  env[std::string(env::kJobId)] = ctx.job_id;
  return env;
}

}  // namespace ddp::jobs
