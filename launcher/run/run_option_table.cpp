// The table of `ddp-launch run`'s options (launcher/run/run_option_table.hpp) and what is derived from
// it: CLI11's registration with the range and choice checks, RunArgs' defaults, values as argv.
#include "launcher/run/run_option_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "common/duration.hpp"
#include "common/error.hpp"

namespace ddp::launcher {
namespace {

using T = OptionType;
using J = JobForm;

constexpr std::string_view kDaemonRuns =
    "the daemon runs the job: it sets this itself (its log directory, events file, run id) or leaves it to run's "
    "default";
constexpr std::string_view kTorchrunOnly = "accepted for torchrun compatibility only; a job file has no use for it";
constexpr std::string_view kNodeLocal = "says something about one node or host, which a job file does not know";
constexpr std::string_view kNotYet = "not offered in job files yet (add a job_key here and a line to jobs/README.md)";

std::vector<RunOption> make_table() {
  return {
      // torchrun 1.13's flags (and their PET_* variables): the node, its ranks and the program.
      {.names = "--nproc-per-node,--nproc_per_node",
       .env = "PET_NPROC_PER_NODE",
       .field = &RunArgs::nproc_per_node,
       .type = T::Text,
       .default_value = "1",
       .help = "Ranks on this node: N, cpu, gpu or auto",
       .range = OptionRange{1, 4096},
       .job_key = "resources.nproc_per_node",
       .job_form = J::Scalar},
      {.names = "--nnodes",
       .env = "PET_NNODES",
       .field = &RunArgs::nnodes,
       .type = T::Text,
       .default_value = "1",
       .help = "Number of nodes (N)",
       .range = OptionRange{1, 4096},
       .job_key = "resources.nodes",
       .job_form = J::Scalar},
      {.names = "--node-rank,--node_rank",
       .env = "PET_NODE_RANK",
       .field = &RunArgs::node_rank,
       .type = T::Integer,
       .help = "This node's rank",
       .not_in_jobs = "every node of a job takes its rank from Slurm"},
      {.names = "--master-addr,--master_addr",
       .env = "PET_MASTER_ADDR",
       .field = &RunArgs::master_addr,
       .default_value = "127.0.0.1",
       .help = "Address of node 0 (the store host)",
       .not_in_jobs = "the store host is this host (local) or Slurm's first node"},
      {.names = "--master-port,--master_port",
       .env = "PET_MASTER_PORT",
       .field = &RunArgs::master_port,
       .type = T::Integer,
       .help = "Store port (default: a free port; required with several nodes)",
       .not_in_jobs = "a free port (local) or one derived from the Slurm job id"},
      {.names = "--standalone",
       .env = "PET_STANDALONE",
       .field = &RunArgs::standalone,
       .type = T::Flag,
       .help = "Single node, a free port and a random run id (TORCHELASTIC_USE_AGENT_STORE=True: our supervisor hosts "
               "the store, see launcher/README.md)",
       .not_in_jobs = kDaemonRuns},
      {.names = "--max-restarts,--max_restarts",
       .env = "PET_MAX_RESTARTS",
       .field = &RunArgs::max_restarts,
       .type = T::Integer,
       .default_value = "0",
       .help = "Worker-group restarts before giving up (0 to 1000); with --rdzv-backend c10d one budget for the "
               "whole job, kept by the rendezvous host (a failed round costs one restart, whichever nodes failed)",
       .range = OptionRange{0, 1000},
       .job_key = "distributed.max_restarts",
       .job_form = J::Scalar},
      {.names = "--monitor-interval,--monitor_interval",
       .env = "PET_MONITOR_INTERVAL",
       .field = &RunArgs::monitor_interval,
       .type = T::Number,
       .default_value = "0.1",
       .help = "Accepted for torchrun compatibility; ddp-launch is event-driven and never polls",
       .not_in_jobs = kTorchrunOnly},
      {.names = "--role",
       .env = "PET_ROLE",
       .field = &RunArgs::role,
       .default_value = "default",
       .help = "Role name (ROLE_NAME)",
       .not_in_jobs = kNotYet},
      {.names = "--log-dir,--log_dir",
       .env = "PET_LOG_DIR",
       .field = &RunArgs::log_dir,
       .help = "Per-attempt, per-rank stdout/stderr/error files here",
       .not_in_jobs = kDaemonRuns},
      {.names = "--no-python,--no_python",
       .env = "PET_NO_PYTHON",
       .field = &RunArgs::no_python,
       .type = T::Flag,
       .help = "Run the program directly, not through python",
       .not_in_jobs = "a job's command: is the whole argv (the daemon passes --no-python)"},
      {.names = "-m,--module",
       .env = "PET_MODULE",
       .field = &RunArgs::module,
       .type = T::Flag,
       .help = "Run a Python module (python -m)",
       .not_in_jobs = "a job's command: is the whole argv ([python3, -m, pkg.train])"},
      {.names = "--start-method,--start_method",
       .env = "PET_START_METHOD",
       .field = &RunArgs::start_method,
       .default_value = "spawn",
       .help = "Accepted for torchrun compatibility",
       .not_in_jobs = kTorchrunOnly},
      // torchrun 1.13's rendezvous flags, and the signals it forwards.
      {.names = "--rdzv-backend,--rdzv_backend",
       .env = "PET_RDZV_BACKEND",
       .field = &RunArgs::rdzv_backend,
       .type = T::Choice,
       .default_value = "static",
       .help = "static (--node-rank, node 0 hosts the store) or c10d (dynamic: nodes join rounds, --nnodes MIN:MAX)",
       .choices = {"static", "c10d"},
       .not_in_jobs = "a job's nodes come from Slurm (static)"},
      {.names = "--rdzv-endpoint,--rdzv_endpoint",
       .env = "PET_RDZV_ENDPOINT",
       .field = &RunArgs::rdzv_endpoint,
       .help = "HOST[:PORT]: the store (static backend: instead of --master-addr/--master-port) or the rendezvous "
               "endpoint (c10d, port 29400 by default)",
       .not_in_jobs = "the store host is this host (local) or Slurm's first node"},
      {.names = "--rdzv-id,--rdzv_id",
       .env = "PET_RDZV_ID",
       .field = &RunArgs::rdzv_id,
       .default_value = "none",
       .help = "Job id (TORCHELASTIC_RUN_ID)",
       .not_in_jobs = kDaemonRuns},
      {.names = "--rdzv-conf,--rdzv_conf",
       .env = "PET_RDZV_CONF",
       .field = &RunArgs::rdzv_conf,
       .help = "c10d: join_timeout=600,last_call_timeout=30,heartbeat_timeout=15 (or keep_alive_interval, "
               "keep_alive_max_attempt),is_host=…,exit_barrier_timeout=300,connection_grace=1 (seconds)",
       .not_in_jobs = "for --rdzv-backend c10d, which jobs do not use"},
      {.names = "--local-addr,--local_addr",
       .env = "PET_LOCAL_ADDR",
       .field = &RunArgs::local_addr,
       .help = "This node's name/address in the rendezvous and in [host:rank] log prefixes (default: host name)",
       .not_in_jobs = kNodeLocal},
      {.names = "--signals-to-handle,--signals_to_handle",
       .env = "PET_SIGNALS_TO_HANDLE",
       .field = &RunArgs::signals_to_handle,
       .default_value = "SIGTERM,SIGINT,SIGHUP,SIGQUIT",
       .help = "Signals forwarded to every worker group",
       .not_in_jobs = "the daemon stops a job with SIGTERM, then SIGKILL after distributed.shutdown_grace"},
      // Where the workers' store lives (--store), where their output goes (torchrun's -r/-t), and how long an
      // attempt may take to reach the store and to stop.
      {.names = "--store",
       .env = "PET_STORE",
       .field = &RunArgs::store,
       .type = T::Choice,
       .default_value = "agent",
       .help = "agent: we host the store; rank0: the script's rank 0 hosts it; file: a FileStore file "
               "({filestore_url}, $DDP_FILESTORE_PATH)",
       .choices = {"agent", "rank0", "file"},
       .job_key = "distributed.store",
       .job_form = J::Scalar},
      {.names = "--filestore",
       .field = &RunArgs::filestore,
       .help = "--store file at this fixed path (default: under the run directory); a stale file there is removed "
               "first",
       .not_in_jobs = "each run of a job gets its own FileStore under its run directory"},
      {.names = "-r,--redirects",
       .env = "PET_REDIRECTS",
       .field = &RunArgs::redirects,
       .default_value = "0",
       .help = "Streams to files only: mask 1=stdout 2=stderr 3=both, or per local rank i:v,i:v",
       .not_in_jobs = kDaemonRuns},
      {.names = "-t,--tee",
       .env = "PET_TEE",
       .field = &RunArgs::tee,
       .default_value = "0",
       .help = "Streams to files and the console: same format as --redirects",
       .not_in_jobs = kDaemonRuns},
      {.names = "--local-ranks-filter,--local_ranks_filter",
       .env = "PET_LOCAL_RANKS_FILTER",
       .field = &RunArgs::local_ranks_filter,
       .help = "Local ranks shown on the console, e.g. 0,2 (files are unaffected; default: all)",
       .not_in_jobs = "a job has no console: every rank's output goes to its log files"},
      {.names = "--rdzv-timeout,--rdzv_timeout",
       .field = &RunArgs::rdzv_timeout,
       .type = T::Duration,
       .default_value = "600",
       .help = "How long every rank may take to reach the store (any --store mode): seconds or e.g. 10m; then the "
               "attempt fails naming the ranks that did not",
       .range = OptionRange{0.001, kMaxDurationS},
       .not_in_jobs = kNotYet},
      {.names = "--shutdown-grace,--shutdown_grace,--shutdown-timeout,--shutdown_timeout",
       .field = &RunArgs::shutdown_grace,
       .type = T::Duration,
       .default_value = "30",
       .help = "Time between SIGTERM and SIGKILL when stopping: seconds or e.g. 2m, at most 1d (also "
               "$PET_SHUTDOWN_TIMEOUT, $TORCH_ELASTIC_SHUTDOWN_TIMEOUT: torchrun's names)",
       .range = OptionRange{0, 86400},
       .job_key = "distributed.shutdown_grace",
       .job_form = J::Scalar},
      {.names = "--hang-timeout,--hang_timeout",
       .field = &RunArgs::hang_timeout,
       .type = T::Duration,
       .default_value = "auto",
       .help = "A rank silent (no output line, metric line or heartbeat) this long hangs: SECONDS (e.g. 300, 5m), "
               "auto (5 x the longest interval it showed, at least 60 s) or off",
       .choices = {"auto", "off"},
       .range = OptionRange{0.001, kMaxDurationS},
       .job_key = "distributed.hang_timeout",
       .job_form = J::Scalar},
      {.names = "--on-hang,--on_hang",
       .field = &RunArgs::on_hang,
       .type = T::Choice,
       .default_value = "restart",
       .help = "After a hang: restart the group (counts against --max-restarts) or fail the job",
       .choices = {"restart", "fail"},
       .job_key = "distributed.on_hang",
       .job_form = J::Scalar},
      // The progress-aware restart budget (launcher/rendezvous/restart_budget.hpp).
      {.names = "--checkpoint-file,--checkpoint_file",
       .field = &RunArgs::checkpoint_file,
       .help = "Progress is this file's integer (the last checkpointed iteration, ft_launcher's contract) "
               "advancing between failures; default: a step metric line past every earlier attempt's",
       .job_key = "distributed.checkpoint_file",
       .job_form = J::Scalar},
      {.names = "--max-no-progress-restarts,--max_no_progress_restarts",
       .field = &RunArgs::max_no_progress_restarts,
       .type = T::Integer,
       .default_value = "3",
       .help = "Restarts in a row without progress before the job ends with exit code 3 (0 to 1000; "
               "--max-restarts still applies; c10d: rounds of the job, progress on any node counts)",
       .range = OptionRange{0, 1000},
       .job_key = "distributed.max_no_progress_restarts",
       .job_form = J::Scalar},
      {.names = "--restart-budget,--restart_budget",
       .field = &RunArgs::restart_budget,
       .type = T::Choice,
       .default_value = "count",
       .help = "What --max-restarts counts: count (every restart) or progress (only restarts after an attempt "
               "without progress)",
       .choices = {"count", "progress"},
       .job_key = "distributed.restart_budget",
       .job_form = J::Scalar},
      {.names = "--min-restart-interval,--min_restart_interval",
       .field = &RunArgs::min_restart_interval,
       .type = T::Duration,
       .default_value = "0",
       .help = "The least time from one attempt's start to the next's, e.g. 30s (a fast crash loop waits)",
       .range = OptionRange{0, kMaxDurationS},
       .job_key = "distributed.min_restart_interval",
       .job_form = J::Scalar},
      {.names = "--gpu-release-timeout,--gpu_release_timeout",
       .field = &RunArgs::gpu_release_timeout,
       .type = T::Duration,
       .default_value = "30s",
       .help = "Before a restart, wait up to this long for the failed ranks' GPU memory to be freed (NVML: their "
               "pids gone, memory back to its level before the run); then restart anyway, with a warning; 0: no wait",
       .range = OptionRange{0, kMaxDurationS},
       .job_key = "distributed.gpu_release_timeout",
       .job_form = J::Scalar},
      // ddp-launch's own flags.
      {.names = "--events",
       .field = &RunArgs::events,
       .help = "Write the supervisor's life as JSON lines to FILE",
       .not_in_jobs = kDaemonRuns},
      {.names = "--python",
       .field = &RunArgs::python,
       .help = "Python interpreter for the workers (default: $PYTHON_EXEC, else the first of $VIRTUAL_ENV, "
               "$CONDA_PREFIX, python3 on PATH, /usr/bin/python3 that can import torch)",
       .not_in_jobs = "a job's command: names its interpreter"},
      {.names = "--backend",
       .field = &RunArgs::backend,
       .type = T::Choice,
       .default_value = "gloo",
       .help = "Value of the {backend} argv placeholder: torch.distributed's gloo, nccl, mpi or ucc",
       .choices = {"gloo", "nccl", "mpi", "ucc"},
       .job_key = "distributed.backend",
       .job_form = J::Scalar},
      {.names = "--no-slurm",
       .field = &RunArgs::no_slurm,
       .type = T::Flag,
       .help = "Ignore SLURM_* (under srun: run as if outside Slurm)",
       .not_in_jobs = "executor: local or slurm says where a job runs"},
      {.names = "--memory-limit-per-rank",
       .field = &RunArgs::memory_limit_per_rank,
       .help = "RAM (+ swap) of each rank, e.g. 4G, through its memory cgroup (needs writable cgroups); a rank "
               "over it is OOM-killed and the summary says so",
       .not_in_jobs = kNotYet,
       .linux_only = "needs Linux's cgroups; the Windows build has no per-rank memory limit"},
      {.names = "--run-dir,--run_dir",
       .env = "PET_RUN_DIR",
       .field = &RunArgs::run_dir,
       .help = "Keep the run directory here (metrics.csv, run.json, error files) without per-rank log files; "
               "default: a temporary one, kept only when metrics were recorded",
       .not_in_jobs = kDaemonRuns},
      {.names = "--global-batch,--global_batch",
       .env = "PET_GLOBAL_BATCH",
       .field = &RunArgs::global_batch,
       .type = T::Integer,
       .help = "Batch across all ranks, split evenly (DDP_PER_RANK_BATCH = B / WORLD_SIZE, lr × 1)",
       .range = OptionRange{1, 1 << 30},
       .job_key = "global_batch",
       .job_form = J::BatchPolicy},
      {.names = "--per-rank-batch,--per_rank_batch",
       .env = "PET_PER_RANK_BATCH",
       .field = &RunArgs::per_rank_batch,
       .type = T::Integer,
       .help = "Batch per rank; the global batch grows with the world size and DDP_LR_SCALE = WORLD_SIZE",
       .range = OptionRange{1, 1 << 30},
       .job_key = "per_rank_batch",
       .job_form = J::BatchPolicy},
      {.names = "--lr-warmup-steps",
       .field = &RunArgs::lr_warmup_steps,
       .type = T::Integer,
       .help = "Ramp the scaled learning rate up over N steps",
       .not_in_jobs = kNotYet},
      {.names = "--metric",
       .field = &RunArgs::metrics,
       .help = "NAME=REGEX: record a metric from matching output lines (first capture group), e.g. "
               "loss='Loss\\s+([0-9.]+)'; repeatable. @ddp-metric lines are always recorded",
       .job_key = "metrics",
       .job_form = J::NamedMap,
       .repeatable = true},
      {.names = "--gpu-watch-interval",
       .field = &RunArgs::gpu_watch_interval,
       .type = T::Duration,
       .default_value = "5s",
       .help = "Sample each rank's GPU (NVML) this often, e.g. 5s; 0 turns the GPU watch off",
       .range = OptionRange{0, kMaxDurationS},
       .job_key = "distributed.gpu_watch_interval",
       .job_form = J::Scalar},
      {.names = "--gpu-low-util",
       .field = &RunArgs::gpu_low_util,
       .type = T::Integer,
       .default_value = "50",
       .help = "Warn once when a rank's GPU stays under this % ...",
       .range = OptionRange{0, 100},
       .job_key = "distributed.gpu_low_util",
       .job_form = J::Scalar},
      {.names = "--gpu-low-window",
       .field = &RunArgs::gpu_low_window,
       .type = T::Duration,
       .default_value = "60s",
       .help = "... for this long, e.g. 60s",
       .range = OptionRange{0, kMaxDurationS},
       .job_key = "distributed.gpu_low_window",
       .job_form = J::Scalar},
      {.names = "--warm-start,--warm_start",
       .env = "DDP_WARM_START",
       .field = &RunArgs::warm_start,
       .type = T::Choice,
       .default_value = "auto",
       .help = "Restarts fork their Python ranks from a per-node process that holds the interpreter, torch and "
               "the modules the last attempt imported (no CUDA, one thread before the fork): auto (Linux, a "
               "Python script or -m module; a --no-python command starts cold), on (the same, and a --no-python "
               "command that is python running a script or -m module, as a daemon job's is; refused on Windows, "
               "which has no fork) or off (every attempt starts cold); a failure of the warm path starts the ranks "
               "cold, said once",
       .choices = {"auto", "on", "off"},
       .job_key = "distributed.warm_start",
       .job_form = J::Scalar},
      {.names = "--straggler-threshold",
       .field = &RunArgs::straggler_threshold,
       .default_value = "0.75",
       .help = "Warn when a rank's step rate (from its step metric lines) stays under this × the median rate "
               "of all ranks for 10 steps (0 < R < 1), or off; the rank is not stopped",
       .not_in_jobs = kNotYet},
      // torchrun flags from torch 2.x, and ones whose main effect is elsewhere.
      {.names = "--run-path,--run_path",
       .env = "PET_RUN_PATH",
       .field = &RunArgs::run_path,
       .type = T::Flag,
       .help = "Run the script with runpy.run_path (torchrun's --run-path; wins over --no-python)",
       .not_in_jobs = "a job's command: is the whole argv"},
      {.names = "--logs-specs,--logs_specs",
       .env = "PET_LOGS_SPECS",
       .field = &RunArgs::logs_specs,
       .help = "torchrun's LogsSpecs plug-in: accepted, ddp-launch's own log layout is used (--log-dir)",
       .not_in_jobs = kTorchrunOnly},
      {.names = "--virtual-local-rank,--virtual_local_rank",
       .env = "PET_VIRTUAL_LOCAL_RANK",
       .field = &RunArgs::virtual_local_rank,
       .type = T::Flag,
       .help = "Every worker sees LOCAL_RANK=0 and CUDA_VISIBLE_DEVICES = its own device (torch 2.x)",
       .not_in_jobs = kNotYet},
      {.names = "--numa-binding,--numa_binding",
       .env = "PET_NUMA_BINDING",
       .field = &RunArgs::numa_binding,
       .help = "node: each rank runs on its NUMA node's CPUs; exclusive: on disjoint CPUs of it (torch 2.x)",
       .not_in_jobs = kNotYet,
       .linux_only = "reads Linux's /sys NUMA nodes; the Windows build cannot bind ranks to them"},
      {.names = "--duplicate-stdout-filters,--duplicate_stdout_filters",
       .env = "PET_DUPLICATE_STDOUT_FILTERS",
       .field = &RunArgs::duplicate_stdout_filters,
       .help = "Also write stdout lines containing any of these comma-separated strings (',,': a comma) to "
               "attempt_N/filtered_stdout.log in the run's log directory (torch 2.x)",
       .not_in_jobs = kNotYet,
       .take_last = true},
      {.names = "--duplicate-stderr-filters,--duplicate_stderr_filters",
       .env = "PET_DUPLICATE_STDERR_FILTERS",
       .field = &RunArgs::duplicate_stderr_filters,
       .help = "The same for stderr lines, to attempt_N/filtered_stderr.log (torch 2.x)",
       .not_in_jobs = kNotYet,
       .take_last = true},
  };
}

std::string number_text(double v) { return v == std::floor(v) ? fmt::format("{:.0f}", v) : fmt::format("{}", v); }

// The text check of one value (CLI11 runs it before converting): "" when the value is one the
// option takes, else what it takes ("must be an integer from 0 to 1000, not '5000'").
std::string value_problem(const RunOption& o, const std::string& value) {
  switch (o.type) {
    case T::Integer: {
      if (!o.range) return "";
      try {
        std::size_t used = 0;
        const long long v = std::stoll(value, &used);
        const auto d = static_cast<double>(v);
        if (used == value.size() && d >= o.range->min && d <= o.range->max) return "";
      } catch (const std::exception&) {
      }
      return fmt::format("must be an integer from {} to {}, not '{}'", number_text(o.range->min),
                         number_text(o.range->max), value);
    }
    case T::Choice:
      if (std::find(o.choices.begin(), o.choices.end(), value) != o.choices.end()) return "";
      return fmt::format("must be one of {}, not '{}'", choices_text(o), value);
    case T::Duration: {
      if (std::find(o.choices.begin(), o.choices.end(), value) != o.choices.end()) return "";
      const auto seconds = parse_duration(value);
      const std::string forms =
          o.choices.empty() ? std::string(kDurationForms) : fmt::format("{} or {}", choices_text(o), kDurationForms);
      if (!seconds) return fmt::format("must be {}, not '{}'", forms, value);
      if (auto why = duration_range_problem(*seconds, {o.range->min, o.range->max})) {
        return fmt::format("{}, not '{}'", *why, value);
      }
      return "";
    }
    case T::Text:
      if (!o.range || value.empty() || value.find_first_not_of("0123456789") != std::string::npos) return "";
      // A count where a word is also allowed (--nproc-per-node N|cpu|gpu|auto): the count's range.
      if (value.size() > 9 || static_cast<double>(std::stol(value)) > o.range->max) {
        return fmt::format("{} is above {}", value, number_text(o.range->max));
      }
      return "";
    case T::Flag:
    case T::Number: return "";
  }
  return "";
}

}  // namespace

std::string RunOption::flag() const {
  std::string_view rest = names;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto name = rest.substr(0, comma);
    if (name.rfind("--", 0) == 0) return std::string(name);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return std::string(names);
}

std::string choices_text(const RunOption& option) { return fmt::format("{}", fmt::join(option.choices, " | ")); }

const std::vector<RunOption>& run_option_table() {
  static const std::vector<RunOption> table = make_table();
  return table;
}

const RunOption* find_run_option(std::string_view flag) {
  for (const auto& o : run_option_table()) {
    std::string_view rest = o.names;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      if (rest.substr(0, comma) == flag) return &o;
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return nullptr;
}

RunArgs::RunArgs() {
  for (const auto& o : run_option_table()) {
    if (!o.default_value.empty()) set_run_option_value(*this, o, std::string(o.default_value));
  }
}

void set_run_option_value(RunArgs& a, const RunOption& o, const std::string& text) {
  struct Set {
    RunArgs& a;
    const std::string& text;
    void operator()(std::string RunArgs::*f) const { a.*f = text; }
    void operator()(int RunArgs::*f) const { a.*f = std::stoi(text); }
    void operator()(unsigned RunArgs::*f) const { a.*f = static_cast<unsigned>(std::stoul(text)); }
    void operator()(double RunArgs::*f) const { a.*f = std::stod(text); }
    void operator()(bool RunArgs::*f) const { a.*f = text.empty() || text == "true" || text == "1"; }
    void operator()(std::optional<long> RunArgs::*f) const { a.*f = std::stol(text); }
    void operator()(std::vector<std::string> RunArgs::*f) const { (a.*f).push_back(text); }
  };
  std::visit(Set{a, text}, o.field);
}

std::vector<std::string> run_option_values(const RunArgs& a, const RunOption& o) {
  struct Get {
    const RunArgs& a;
    std::vector<std::string> operator()(std::string RunArgs::*f) const { return {a.*f}; }
    std::vector<std::string> operator()(int RunArgs::*f) const { return {std::to_string(a.*f)}; }
    std::vector<std::string> operator()(unsigned RunArgs::*f) const { return {std::to_string(a.*f)}; }
    std::vector<std::string> operator()(double RunArgs::*f) const { return {fmt::format("{}", a.*f)}; }
    std::vector<std::string> operator()(bool RunArgs::*f) const {
      return a.*f ? std::vector<std::string>{""} : std::vector<std::string>{};
    }
    std::vector<std::string> operator()(std::optional<long> RunArgs::*f) const {
      return a.*f ? std::vector<std::string>{std::to_string(*(a.*f))} : std::vector<std::string>{};
    }
    std::vector<std::string> operator()(std::vector<std::string> RunArgs::*f) const { return a.*f; }
  };
  return std::visit(Get{a}, o.field);
}

void register_run_options(CLI::App& sub, RunArgs& a) {
  for (const auto& o : run_option_table()) {
    const std::string names(o.names);
    const std::string help(o.help);
    CLI::Option* opt = std::visit(
        [&](auto field) -> CLI::Option* {
          if constexpr (std::is_same_v<decltype(field), bool RunArgs::*>) {
            return sub.add_flag(names, a.*field, help);
          } else {
            return sub.add_option(names, a.*field, help);
          }
        },
        o.field);
    if (!o.env.empty()) opt->envname(std::string(o.env));
    if (!o.default_value.empty()) opt->capture_default_str();
    if (o.type != T::Flag) {
      // A choice's description is CLI11's IsMember form, {a,b}: completion offers the values (app/cli_tree).
      const std::string desc = o.type == T::Choice ? fmt::format("{{{}}}", fmt::join(o.choices, ",")) : "";
      opt->check(CLI::Validator([&o](std::string& value) { return value_problem(o, value); }, desc, ""));
    }
    if (o.repeatable) opt->allow_extra_args(false);  // one value per use: the script's command line follows
    if (o.take_last) opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  }
}

double run_option_seconds(const RunArgs& a, std::string_view flag) {
  const auto* o = find_run_option(flag);
  if (!o || o->type != T::Duration) throw Error(fmt::format("{} is not a duration option", flag));
  return parse_duration_in(run_option_values(a, *o).at(0), {o->range->min, o->range->max}, o->flag());
}

void check_run_option_values(const RunArgs& a) {
  for (const auto& o : run_option_table()) {
    if (o.type == T::Flag || o.type == T::Number) continue;
    for (const auto& v : run_option_values(a, o)) {
      if (auto why = value_problem(o, v); !why.empty()) throw UsageError(fmt::format("{} {}", o.flag(), why));
    }
  }
}

void check_linux_only_options(const RunArgs& a) {
  const RunArgs defaults;
  for (const auto& o : run_option_table()) {
    if (!o.linux_only.empty() && run_option_values(a, o) != run_option_values(defaults, o)) {
      throw UsageError(fmt::format("{} {}", o.flag(), o.linux_only));
    }
  }
}

namespace {

std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

std::string takes(const RunOption& o) {
  const auto range = [&](std::string_view unit) {
    return o.range ? fmt::format(" {}..{}{}", number_text(o.range->min), number_text(o.range->max), unit) : "";
  };
  switch (o.type) {
    case T::Flag: return "flag";
    case T::Integer: return "integer" + range("");
    case T::Number: return "number";
    case T::Duration:
      return "duration" + range(" s") +
             (o.choices.empty() ? "" : cell(fmt::format(", {}", fmt::join(o.choices, ", "))));
    case T::Choice: return cell(choices_text(o));
    case T::Text:
      return o.range ? fmt::format("text (a count: {}..{})", number_text(o.range->min), number_text(o.range->max))
                     : "text";
  }
  return "";
}

std::string job_cell(const RunOption& o) {
  switch (o.job_form) {
    case JobForm::None: return "";
    case JobForm::Scalar: return fmt::format("`{}`", o.job_key);
    case JobForm::NamedMap: return fmt::format("`{}: {{name: regex}}`", o.job_key);
    case JobForm::BatchPolicy: return fmt::format("`distributed.batch_policy: {}` + `batch_size`", o.job_key);
  }
  return "";
}

}  // namespace

std::string run_options_markdown() {
  std::string out =
      "# `ddp-launch run` options\n\n"
      "Generated from the option table, launcher/run/run_option_table.cpp, which also registers the flags, checks\n"
      "their values, reads the job file's run keys and builds the argv the daemon and `sbatch` pass to `run`.\n"
      "Do not edit: `DDP_UPDATE_DOCS=1 build/bin/unit_launcher -tc='*docs*'` rewrites it after a table change.\n"
      "A job file's run keys (jobs/README.md) take the values their flag takes and are checked by `run`'s own "
      "rules.\n\n"
      "| Flag | Variable | Job file | Takes | Default | What it does |\n"
      "|---|---|---|---|---|---|\n";
  for (const auto& o : run_option_table()) {
    std::string spellings;
    std::string_view rest = o.names;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      spellings += fmt::format("{}`{}`", spellings.empty() ? "" : " ", rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    std::string help = cell(o.help);
    if (!o.linux_only.empty()) help += fmt::format(" (Linux only: {})", cell(o.linux_only));
    out +=
        fmt::format("| {} | {} | {} | {} | {} | {} |\n", spellings, o.env.empty() ? "" : fmt::format("`{}`", o.env),
                    job_cell(o), takes(o), o.default_value.empty() ? "" : fmt::format("`{}`", o.default_value), help);
  }
  out += "\n## Not in job files, and why\n\n";
  for (const auto& o : run_option_table()) {
    if (o.job_form == JobForm::None) out += fmt::format("- `{}`: {}\n", o.flag(), o.not_in_jobs);
  }
  return out;
}

}  // namespace ddp::launcher
