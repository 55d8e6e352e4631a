#pragma once
// `ddp-launch run`'s options as data: the flags (torchrun's, dash and underscore spellings, PET_*
// forms) are registered on a CLI11 app, and ONE pure function, plan_run, turns what was parsed
// plus a HostFacts value into the supervisor's config, or a UsageError naming the flag and the
// fix. `run` and `sbatch` both go through it, so sbatch rejects what run would reject.
// Side effects (the run directory in --log-dir, resolving the interpreter on PATH) happen after.
#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "launcher/run/host_facts.hpp"
#include "launcher/supervisor/supervisor_config.hpp"

namespace ddp::launcher {

struct RunArgs {
  std::string nproc_per_node = "1";
  std::string nnodes = "1";
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  bool standalone = false;
  int max_restarts = 0;
  double monitor_interval = 0.1;
  std::string role = "default";
  std::string log_dir;
  bool no_python = false;
  bool module = false;
  bool run_path = false;
  std::string start_method = "spawn";
  std::string rdzv_backend = "static";
  std::string rdzv_endpoint;
  std::string rdzv_id = "none";
  std::string rdzv_conf;
  std::string local_addr;
  std::string signals_to_handle = "SIGTERM,SIGINT,SIGHUP,SIGQUIT";
  std::string store = "agent";
  std::string filestore;
  std::string redirects = "0";
  std::string tee = "0";
  std::string local_ranks_filter;
  std::string logs_specs;
  double shutdown_grace = 30;
  double rdzv_timeout = 600;
  std::string hang_timeout = "auto";
  std::string on_hang = "restart";
  std::string events;
  std::string python;
  std::string backend = "gloo";
  bool no_slurm = false;
  std::string memory_limit_per_rank;
  std::string run_dir;
  std::optional<long> global_batch;
  std::optional<long> per_rank_batch;
  std::optional<long> lr_warmup_steps;
  std::vector<std::string> metrics;
  std::string gpu_watch_interval = "5s";
  unsigned gpu_low_util = 50;
  std::string gpu_low_window = "60s";
  std::string straggler_threshold = "0.75";  // or "off"
  // Newer torchrun flags (torch 2.x).
  bool virtual_local_rank = false;
  std::string numa_binding;
  std::string duplicate_stdout_filters;  // comma-separated, ",," a literal comma (torchrun's rule)
  std::string duplicate_stderr_filters;

  std::vector<std::string> command;  // the script (or program) and its arguments
  // Flags given on the command line or through their PET_* variable, by their first long name
  // ("--nnodes"): those win over Slurm.
  std::set<std::string> given;
  bool was_given(const std::string& flag) const { return given.count(flag) > 0; }
};

// Registers run's options on `sub`, bound to the returned RunArgs; collect_run_args fills
// `command` and `given` once `sub` has parsed.
std::shared_ptr<RunArgs> add_run_options(CLI::App& sub);
void collect_run_args(const CLI::App& sub, RunArgs& args);

struct RunPlan {
  SupervisorConfig config;        // worker_argv[0] not resolved on PATH yet
  std::vector<std::string> info;  // lines for the log, in order
  std::vector<std::string> warnings;
  // The interpreter runs the script (no --no-python): worker_argv[0] is --python or $PYTHON_EXEC,
  // or empty when neither was given (the shell then picks one that can import torch).
  bool python_script = false;
  // Said again when the job fails: a likely cause seen before launch (a literal --rank in argv).
  std::string failure_hint;
};

// The pure core: parsed arguments + facts about the host → the supervisor's config.
RunPlan plan_run(const RunArgs& args, const HostFacts& facts);

// "60s", "500ms", "2m" or a plain number of seconds; a UsageError naming `flag` otherwise.
std::chrono::milliseconds parse_duration(const std::string& value, const char* flag);

}  // namespace ddp::launcher
