// Registration of `ddp-launch run`'s flags (torchrun's names, dash and underscore spellings, PET_*
// variables). The rules that turn them into a config are in run_options.cpp.
#include <fmt/format.h>

#include "launcher/run/run_options.hpp"

namespace ddp::launcher {
namespace {

void add_torchrun_flags(CLI::App* sub, RunArgs& a);
void add_torchrun_rdzv_flags(CLI::App* sub, RunArgs& a);
void add_store_and_output_flags(CLI::App* sub, RunArgs& a);
void add_our_flags(CLI::App* sub, RunArgs& a);
void add_torchrun_extras(CLI::App* sub, RunArgs& a);

}  // namespace

std::shared_ptr<RunArgs> add_run_options(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto& a = *args;
  add_torchrun_flags(&app, a);
  add_torchrun_rdzv_flags(&app, a);
  add_store_and_output_flags(&app, a);
  add_our_flags(&app, a);
  add_torchrun_extras(&app, a);
  return args;
}

namespace {

// torchrun 1.13's flags (and their PET_* variables): the node, its ranks and the program.
void add_torchrun_flags(CLI::App* sub, RunArgs& a) {
  sub->add_option("--nproc-per-node,--nproc_per_node", a.nproc_per_node, "Ranks on this node: N, cpu, gpu or auto")
      ->envname("PET_NPROC_PER_NODE")
      ->capture_default_str();
  sub->add_option("--nnodes", a.nnodes, "Number of nodes (N)")->envname("PET_NNODES")->capture_default_str();
  sub->add_option("--node-rank,--node_rank", a.node_rank, "This node's rank")->envname("PET_NODE_RANK");
  sub->add_option("--master-addr,--master_addr", a.master_addr, "Address of node 0 (the store host)")
      ->envname("PET_MASTER_ADDR")
      ->capture_default_str();
  sub->add_option("--master-port,--master_port", a.master_port,
                  "Store port (default: a free port; required with several nodes)")
      ->envname("PET_MASTER_PORT");
  sub->add_flag("--standalone", a.standalone,
                "Single node, a free port and a random run id (TORCHELASTIC_USE_AGENT_STORE=True: our supervisor hosts "
                "the store, see launcher/README.md)")
      ->envname("PET_STANDALONE");
  sub->add_option("--max-restarts,--max_restarts", a.max_restarts, "Worker-group restarts before giving up")
      ->envname("PET_MAX_RESTARTS")
      ->capture_default_str();
  sub->add_option("--monitor-interval,--monitor_interval", a.monitor_interval,
                  "Accepted for torchrun compatibility; ddp-launch is event-driven and never polls")
      ->envname("PET_MONITOR_INTERVAL");
  sub->add_option("--role", a.role, "Role name (ROLE_NAME)")->envname("PET_ROLE")->capture_default_str();
  sub->add_option("--log-dir,--log_dir", a.log_dir, "Per-attempt, per-rank stdout/stderr/error files here")
      ->envname("PET_LOG_DIR");
  sub->add_flag("--no-python,--no_python", a.no_python, "Run the program directly, not through python")
      ->envname("PET_NO_PYTHON");
  sub->add_flag("-m,--module", a.module, "Run a Python module (python -m)")->envname("PET_MODULE");
  sub->add_option("--start-method,--start_method", a.start_method, "Accepted for torchrun compatibility")
      ->envname("PET_START_METHOD");
}

// torchrun 1.13's rendezvous flags, and the signals it forwards.
void add_torchrun_rdzv_flags(CLI::App* sub, RunArgs& a) {
  sub->add_option("--rdzv-backend,--rdzv_backend", a.rdzv_backend,
                  "static (--node-rank, node 0 hosts the store) or c10d (dynamic: nodes join rounds, "
                  "--nnodes MIN:MAX)")
      ->envname("PET_RDZV_BACKEND")
      ->capture_default_str();
  sub->add_option("--rdzv-endpoint,--rdzv_endpoint", a.rdzv_endpoint,
                  "HOST[:PORT]: the store (static backend: instead of --master-addr/--master-port) or the rendezvous "
                  "endpoint (c10d, port 29400 by default)")
      ->envname("PET_RDZV_ENDPOINT");
  sub->add_option("--rdzv-id,--rdzv_id", a.rdzv_id, "Job id (TORCHELASTIC_RUN_ID)")->envname("PET_RDZV_ID");
  sub->add_option("--rdzv-conf,--rdzv_conf", a.rdzv_conf,
                  "c10d: join_timeout=600,last_call_timeout=30,heartbeat_timeout=15 (or keep_alive_interval, "
                  "keep_alive_max_attempt),is_host=…,exit_barrier_timeout=300,connection_grace=1 (seconds)")
      ->envname("PET_RDZV_CONF");
  sub->add_option("--local-addr,--local_addr", a.local_addr,
                  "This node's name/address in the rendezvous and in [host:rank] log prefixes (default: host name)")
      ->envname("PET_LOCAL_ADDR");
  sub->add_option("--signals-to-handle,--signals_to_handle", a.signals_to_handle,
                  "Signals forwarded to every worker group")
      ->envname("PET_SIGNALS_TO_HANDLE")
      ->capture_default_str();
}

// Where the workers' store lives (--store), where their output goes (torchrun's -r/-t), and how long an
// attempt may take to reach the store and to stop.
void add_store_and_output_flags(CLI::App* sub, RunArgs& a) {
  sub->add_option("--store", a.store,
                  "agent: we host the store; rank0: the script's rank 0 hosts it; file: a FileStore file "
                  "({filestore_url}, $DDP_FILESTORE_PATH)")
      ->check(CLI::IsMember({"agent", "rank0", "file"}))
      ->envname("PET_STORE")
      ->capture_default_str();
  sub->add_option(
      "--filestore", a.filestore,
      "--store file at this fixed path (default: under the run directory); a stale file there is removed first");
  sub->add_option("-r,--redirects", a.redirects,
                  "Streams to files only: mask 1=stdout 2=stderr 3=both, or per local rank i:v,i:v")
      ->envname("PET_REDIRECTS")
      ->capture_default_str();
  sub->add_option("-t,--tee", a.tee, "Streams to files and the console: same format as --redirects")
      ->envname("PET_TEE")
      ->capture_default_str();
  sub->add_option("--local-ranks-filter,--local_ranks_filter", a.local_ranks_filter,
                  "Local ranks shown on the console, e.g. 0,2 (files are unaffected; default: all)")
      ->envname("PET_LOCAL_RANKS_FILTER");
  sub->add_option("--rdzv-timeout,--rdzv_timeout", a.rdzv_timeout,
                  "Seconds for every rank to reach the store (any --store mode); then the attempt fails naming the "
                  "ranks that did not")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--shutdown-grace,--shutdown_grace,--shutdown-timeout,--shutdown_timeout", a.shutdown_grace,
                  "Seconds between SIGTERM and SIGKILL when stopping (also $PET_SHUTDOWN_TIMEOUT, "
                  "$TORCH_ELASTIC_SHUTDOWN_TIMEOUT: torchrun's names)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--hang-timeout,--hang_timeout", a.hang_timeout,
                  "A rank silent (no output line, metric line or heartbeat) this long hangs: SECONDS (e.g. 300, 5m), "
                  "auto (5 x the longest interval it showed, at least 60 s) or off")
      ->capture_default_str();
  sub->add_option("--on-hang,--on_hang", a.on_hang,
                  "After a hang: restart the group (counts against --max-restarts) or fail the job")
      ->capture_default_str();
}

// ddp-launch's own flags.
void add_our_flags(CLI::App* sub, RunArgs& a) {
  sub->add_option("--events", a.events, "Write the supervisor's life as JSON lines to FILE");
  sub->add_option("--python", a.python,
                  "Python interpreter for the workers (default: $PYTHON_EXEC, else the first of $VIRTUAL_ENV, "
                  "$CONDA_PREFIX, python3 on PATH, /usr/bin/python3 that can import torch)");
  sub->add_option("--backend", a.backend, "Value of the {backend} argv placeholder")->capture_default_str();
  sub->add_flag("--no-slurm", a.no_slurm, "Ignore SLURM_* (under srun: run as if outside Slurm)");
  sub->add_option("--memory-limit-per-rank", a.memory_limit_per_rank,
                  "RAM (+ swap) of each rank, e.g. 4G, through its memory cgroup (needs writable cgroups); a rank "
                  "over it is OOM-killed and the summary says so");
  sub->add_option("--run-dir,--run_dir", a.run_dir,
                  "Keep the run directory here (metrics.csv, run.json, error files) without per-rank log files; "
                  "default: a temporary one, kept only when metrics were recorded")
      ->envname("PET_RUN_DIR");
  sub->add_option("--global-batch,--global_batch", a.global_batch,
                  "Batch across all ranks, split evenly (DDP_PER_RANK_BATCH = B / WORLD_SIZE, lr × 1)")
      ->envname("PET_GLOBAL_BATCH");
  sub->add_option("--per-rank-batch,--per_rank_batch", a.per_rank_batch,
                  "Batch per rank; the global batch grows with the world size and DDP_LR_SCALE = WORLD_SIZE")
      ->envname("PET_PER_RANK_BATCH");
  sub->add_option("--lr-warmup-steps", a.lr_warmup_steps, "Ramp the scaled learning rate up over N steps");
  sub->add_option("--metric", a.metrics,
                  "NAME=REGEX: record a metric from matching output lines (first capture group), e.g. "
                  "loss='Loss\\s+([0-9.]+)'; repeatable. @ddp-metric lines are always recorded")
      ->allow_extra_args(false);  // one value per --metric: the script's command line follows
  sub->add_option("--gpu-watch-interval", a.gpu_watch_interval,
                  "Sample each rank's GPU (NVML) this often, e.g. 5s; 0 turns the GPU watch off")
      ->capture_default_str();
  sub->add_option("--gpu-low-util", a.gpu_low_util, "Warn once when a rank's GPU stays under this % ...")
      ->check(CLI::Range(0u, 100u))
      ->capture_default_str();
  sub->add_option("--gpu-low-window", a.gpu_low_window, "... for this long, e.g. 60s")->capture_default_str();
  sub->add_option("--straggler-threshold", a.straggler_threshold,
                  "Warn when a rank's step rate (from its step metric lines) stays under this × the median rate "
                  "of all ranks for 10 steps (0 < R < 1), or off; the rank is not stopped")
      ->capture_default_str();
  // Everything from the first positional on is the worker's command line, flags included.
  sub->prefix_command();
  sub->footer("Usage: ddp-launch run [options] SCRIPT [script args...]  (or PROGRAM [args] with --no-python)");
}

}  // namespace

void collect_run_args(const CLI::App& sub, RunArgs& a) {
  a.command = sub.remaining();
  if (!a.command.empty() && a.command.front() == "--") a.command.erase(a.command.begin());
  a.given.clear();
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->count() > 0 && !opt->get_lnames().empty()) a.given.insert("--" + opt->get_lnames().front());
  }
}

namespace {

// torchrun flags from torch 2.x, and ones whose main effect is elsewhere.
void add_torchrun_extras(CLI::App* sub, RunArgs& a) {
  sub->add_flag("--run-path,--run_path", a.run_path,
                "Run the script with runpy.run_path (torchrun's --run-path; wins over --no-python)")
      ->envname("PET_RUN_PATH");
  sub->add_option("--logs-specs,--logs_specs", a.logs_specs,
                  "torchrun's LogsSpecs plug-in: accepted, ddp-launch's own log layout is used (--log-dir)")
      ->envname("PET_LOGS_SPECS");
  sub->add_flag("--virtual-local-rank,--virtual_local_rank", a.virtual_local_rank,
                "Every worker sees LOCAL_RANK=0 and CUDA_VISIBLE_DEVICES = its own device (torch 2.x)")
      ->envname("PET_VIRTUAL_LOCAL_RANK");
  sub->add_option("--numa-binding,--numa_binding", a.numa_binding,
                  "node: each rank runs on its NUMA node's CPUs; exclusive: on disjoint CPUs of it (torch 2.x)")
      ->envname("PET_NUMA_BINDING");
  sub->add_option("--duplicate-stdout-filters,--duplicate_stdout_filters", a.duplicate_stdout_filters,
                  "Also write stdout lines containing any of these comma-separated strings (',,': a comma) to "
                  "attempt_N/filtered_stdout.log in the run's log directory (torch 2.x)")
      ->envname("PET_DUPLICATE_STDOUT_FILTERS")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // argparse: the last one wins
  sub->add_option("--duplicate-stderr-filters,--duplicate_stderr_filters", a.duplicate_stderr_filters,
                  "The same for stderr lines, to attempt_N/filtered_stderr.log (torch 2.x)")
      ->envname("PET_DUPLICATE_STDERR_FILTERS")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);  // argparse: the last one wins
}

}  // namespace

}  // namespace ddp::launcher
