#pragma once
// JobSpec: a job YAML file as a value (pure: no files, processes or clocks). The schema is
// documented with an example per feature in jobs/README.md. Parsing collects every problem it
// finds, each with file:line:column and the expected form, and throws them together.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.hpp"
#include "common/error.hpp"
#include "slurm/sbatch_script.hpp"

namespace ddp::jobs {

enum class BatchPolicy { None, GlobalBatch, PerRankBatch };
// never: the daemon never relaunches; on-failure: any failure is retried up to max_retries;
// exit-code: only failures whose exit code is in retryable_exit_codes (Kubeflow's ExitCode).
enum class RestartPolicy { Never, OnFailure, ExitCode };

struct ExitCodeRange {
  int first = 0;
  int last = 0;
  bool contains(int code) const { return code >= first && code <= last; }
};

struct JobResources {
  int nodes = 1;           // local: only 1 (one supervisor, this host); slurm: #SBATCH --nodes
  int nproc_per_node = 1;  // ranks; each takes one CPU slot of the host
  int gpus_per_node = 0;   // whole GPUs, never shared with another job
};

// The run options a job file gives (their keys, values and checks are rows of the launcher's option
// table, launcher/run/run_option_table.hpp), as `ddp-launch run` parsed them: the daemon's own view.
struct JobDistributed {
  std::string backend = "gloo";          // `run --backend`: the {backend} placeholder
  std::string store = "agent";           // `run --store`: agent | rank0 | file
  int max_restarts = 0;                  // `run --max-restarts`: worker-group restarts inside one supervisor
  double shutdown_grace_s = 30;          // `run --shutdown-grace`: SIGTERM → SIGKILL when a group is stopped
  std::string hang_timeout = "auto";     // `run --hang-timeout`: a duration, auto or off, as written
  std::string on_hang = "restart";       // `run --on-hang`: restart | fail
  std::string restart_budget = "count";  // `run --restart-budget`: what max_restarts counts, count | progress
  std::string warm_start = "auto";       // `run --warm-start`: auto (a job's command starts cold) | on | off
  BatchPolicy batch_policy = BatchPolicy::None;
  int batch_size = 0;  // the global or per-rank batch, per batch_policy
};

struct JobRestart {
  RestartPolicy policy = RestartPolicy::Never;
  int max_retries = 0;  // daemon-level relaunches of the whole job (a new supervisor each)
  double backoff_initial_s = 10;
  double backoff_max_s = 300;
  double backoff_factor = 2;
  std::vector<ExitCodeRange> retryable_exit_codes{{128, 255}};
  std::vector<std::string> no_retry_log_patterns;  // ECMAScript regexes searched in the ranks' logs
};

// executor: slurm: the #SBATCH lines the daemon may not decide itself.
struct JobSlurm {
  std::string partition;  // empty: the cluster's default partition
  std::string account;
  std::string qos;
  std::optional<double> time_limit_s;    // #SBATCH --time; empty: the partition's default
  std::vector<std::string> sbatch_args;  // any other sbatch option, one per item (--exclusive, --mem=8G)
};

struct JobSpec {
  std::string api_version = "ddp/v1";
  std::string name;
  std::vector<std::string> command;  // argv; empty when `shell` is used
  std::string shell;                 // run through /bin/sh -c, only when asked for
  std::vector<std::string> args;
  std::string workdir;
  std::map<std::string, std::string> env;
  JobResources resources;
  JobDistributed distributed;
  JobRestart restart;
  std::optional<double> timeout_s;             // limits.timeout
  int priority = 0;                            // HIGHER runs first; FIFO among equals
  std::map<std::string, std::string> metrics;  // name → regex with one capture group (a number)
  std::string executor = "local";              // local | slurm
  JobSlurm slurm;                              // executor: slurm only
  // `ddp-launch run` options from the job file's run keys (resources.nodes/nproc_per_node,
  // distributed.*, metrics), in the option table's order, defaults included; parsed and checked by
  // run's own parser and plan_run when the file was read.
  std::vector<std::string> run_options;

  // The argv the job runs (command + args, or shell through /bin/sh -c; Windows: cmd.exe /c).
  std::vector<std::string> worker_argv() const;
};

struct SpecProblem {
  int line = 0;  // 1-based; 0 when the position is unknown
  int column = 0;
  std::string message;
};

class JobSpecError : public UsageError {
 public:
  JobSpecError(std::string file, std::vector<SpecProblem> problems);
  const std::vector<SpecProblem>& problems() const { return problems_; }
  const std::string& file() const { return file_; }
  // All of the text: what() stops at a NUL that a quoted value may carry.
  const std::string& message() const { return message_; }

 private:
  std::string message_;
  std::string file_;
  std::vector<SpecProblem> problems_;
};

// YAML text → JobSpec; `file` names the source in error messages ("job.yaml", "<request body>").
JobSpec parse_job_spec(std::string_view yaml, const std::string& file);

// The duration fields' ranges (common/duration.hpp reads and checks them); a run option's range is
// in the launcher's option table.
inline constexpr DurationRange kTimeoutRange{0.001, kMaxDurationS};     // limits.timeout
inline constexpr DurationRange kBackoffRange{0, 30 * 86400.0};          // restart.backoff.*
inline constexpr DurationRange kSlurmTimeLimitRange{1, kMaxDurationS};  // slurm.time_limit

// Where and as what the daemon launches one run of a job.
struct LaunchContext {
  std::string self_exe;               // the ddp-launch binary (/proc/self/exe)
  std::string job_id;                 // becomes --rdzv-id job-<id>
  std::filesystem::path log_dir;      // --log-dir: <run_id>_<random>/attempt_<k>/<local_rank>/{stdout,stderr}.log
  std::filesystem::path events_path;  // --events
  std::vector<int> gpu_indices;       // host GPUs given to the job
};

// JobSpec + context → the `ddp-launch run …` argv that runs the job (pure).
std::vector<std::string> launch_argv(const JobSpec& spec, const LaunchContext& ctx);

// Variables the daemon adds to (or overrides in) the supervisor's environment: the job's env,
// CUDA_VISIBLE_DEVICES for its GPUs (empty string when it has none), the batch policy, the job id.
std::map<std::string, std::string> launch_env(const JobSpec& spec, const LaunchContext& ctx);

// The sbatch script of a run (executor: slurm), from the same spec: one `ddp-launch run` per node
// under srun, whose topology comes from SLURM_*; `output` is the job's output file (%j allowed).
slurm::SbatchScript slurm_batch_script(const JobSpec& spec, const LaunchContext& ctx, const std::string& output);

// Seconds → Slurm's time format D-HH:MM:SS (rounded up to whole seconds).
std::string slurm_time(double seconds);

}  // namespace ddp::jobs
