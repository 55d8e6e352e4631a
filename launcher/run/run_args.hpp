#pragma once
// RunArgs: what `ddp-launch run`'s options say, as parsed, before any rule is applied. Every field is
// one row of the option table (launcher/run/run_option_table.hpp), which holds its flag spellings, PET_*
// variable, job-file key, range or choices, default (RunArgs() applies them) and help.
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace ddp::launcher {

struct RunArgs {
  RunArgs();  // every field at the option table's default

  std::string nproc_per_node;
  std::string nnodes;
  int node_rank{};
  std::string master_addr;
  int master_port{};
  bool standalone{};
  int max_restarts{};
  double monitor_interval{};
  std::string role;
  std::string log_dir;
  bool no_python{};
  bool module{};
  bool run_path{};
  std::string start_method;
  std::string rdzv_backend;
  std::string rdzv_endpoint;
  std::string rdzv_id;
  std::string rdzv_conf;
  std::string local_addr;
  std::string signals_to_handle;
  std::string store;
  std::string filestore;
  std::string redirects;
  std::string tee;
  std::string local_ranks_filter;
  std::string logs_specs;
  std::string shutdown_grace;  // a duration (seconds, 30s, 2m)
  std::string rdzv_timeout;    // a duration
  std::string hang_timeout;    // a duration, auto or off
  std::string on_hang;
  std::string checkpoint_file;
  int max_no_progress_restarts{};
  std::string restart_budget;
  std::string min_restart_interval;  // a duration
  std::string gpu_release_timeout;   // a duration
  std::string events;
  std::string python;
  std::string backend;
  bool no_slurm{};
  std::string memory_limit_per_rank;
  std::string run_dir;
  std::optional<long> global_batch;
  std::optional<long> per_rank_batch;
  std::optional<long> lr_warmup_steps;
  std::vector<std::string> metrics;
  std::string gpu_watch_interval;
  unsigned gpu_low_util{};
  std::string gpu_low_window;
  std::string straggler_threshold;  // a ratio or "off"
  std::string warm_start;           // auto, on or off
  // Newer torchrun flags (torch 2.x).
  bool virtual_local_rank{};
  std::string numa_binding;
  std::string duplicate_stdout_filters;  // comma-separated, ",," a literal comma (torchrun's rule)
  std::string duplicate_stderr_filters;

  std::vector<std::string> command;  // the script (or program) and its arguments
  // Flags given on the command line or through their PET_* variable, by their first long name
  // ("--nnodes"): those win over Slurm.
  std::set<std::string> given;
  bool was_given(const std::string& flag) const { return given.count(flag) > 0; }
};

}  // namespace ddp::launcher
