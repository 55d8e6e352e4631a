// JobSpec → what runs it: the `ddp-launch run` argv and environment of a local run, the sbatch
// script of a Slurm one.
#include <fmt/format.h>

#include <cmath>

#include "common/duration.hpp"
#include "common/env_contract.hpp"
#include "jobs/job_spec.hpp"

namespace ddp::jobs {

std::vector<std::string> launch_argv(const JobSpec& spec, const LaunchContext& ctx) {
  // The job file's run options (resources, distributed.*, metrics: spec.run_options, from the launcher's
  // option table), then the ones the daemon sets.
  std::vector<std::string> argv = {ctx.self_exe, "run"};
  argv.insert(argv.end(), spec.run_options.begin(), spec.run_options.end());
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

slurm::SbatchScript slurm_batch_script(const JobSpec& spec, const LaunchContext& ctx, const std::string& output) {
  slurm::SbatchScript s;
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
  // The job's run options less --nnodes (#SBATCH --nodes) and --metric (no run directory is kept).
  for (std::size_t i = 0; i + 1 < spec.run_options.size(); i += 2) {
    if (spec.run_options[i] == "--nnodes" || spec.run_options[i] == "--metric") continue;
    s.run_options.insert(s.run_options.end(), {spec.run_options[i], spec.run_options[i + 1]});
  }
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
