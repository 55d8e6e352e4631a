#pragma once
// SupervisorConfig: everything one `run` decides before the supervisor starts (launcher/run/'s
// plan_run builds it, the supervisor's units read it), and what follows from it alone.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/hang/gpu_watch_core.hpp"
#include "launcher/hang/progress_watchdog.hpp"
#include "launcher/outputs/metrics.hpp"
#include "launcher/rendezvous/rendezvous.hpp"
#include "launcher/rendezvous/restart_budget.hpp"
#include "launcher/supervisor/store_mode.hpp"
#include "launcher/workers/rank_log_lines.hpp"
#include "launcher/workers/rank_plan.hpp"
#include "launcher/workers/worker_env.hpp"

namespace ddp::launcher {

struct SupervisorConfig {
  std::vector<std::string> worker_argv;  // argv[0] resolved; may hold {rank}-style placeholders
  RankPlanInput plan;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 0;  // 0: agent mode picks a free port
  // The ranks' MASTER_ADDR (and {master_addr}, {dist_url}) is master_addr resolved once to a
  // numeric address (the Windows build: gloo there fails on names that resolve to addresses it
  // cannot use, pytorch#80638); a round's store host is resolved the same way.
  bool numeric_master_addr = false;
  StoreMode store_mode = StoreMode::Agent;
  int max_restarts = 0;
  std::chrono::milliseconds shutdown_grace{30000};
  std::chrono::milliseconds restart_backoff{100};
  // Every rank must reach the store within this, or the attempt fails naming the missing ones.
  std::chrono::milliseconds rendezvous_timeout{600000};
  // --hang-timeout (launcher/hang/progress_watchdog.hpp) and --on-hang restart|fail.
  HangTimeout hang_timeout;
  bool restart_on_hang = true;
  // The progress-aware restart budget (launcher/rendezvous/restart_budget.hpp).
  int max_no_progress_restarts = 3;
  BudgetMode budget_mode = BudgetMode::Count;
  std::filesystem::path checkpoint_file;              // --checkpoint-file; empty: progress is steps
  std::chrono::milliseconds min_restart_interval{0};  // from one attempt's start to the next's
  // The health gate's bound (launcher/supervisor/gpu_release_gate.hpp); 0: no gate.
  std::chrono::milliseconds gpu_release_timeout{30000};
  std::string run_id = "none";
  std::filesystem::path run_dir;  // attempt_N/<local_rank>/{error.json,stdout.log,stderr.log}
  // --log-dir: run_dir is this run's <run_id>_<random> inside it (torchrun's layout). Runs share
  // it; each records its processes in its own run_dir, and a new one sweeps its dead siblings'.
  std::filesystem::path log_base_dir;
  bool remove_run_dir = false;           // a temporary run_dir holding nothing the user asked to keep
  std::filesystem::path filestore_path;  // StoreMode::File: --filestore, or empty for <run_dir>/filestore
  // Per local rank: torchrun's -r/--redirects and -t/--tee masks (1 stdout, 2 stderr). Redirected
  // streams go to the files only, teed ones to the files and the console. Empty: all 0.
  std::vector<int> redirects;
  std::vector<int> tee;
  std::vector<bool> console_ranks;  // --local-ranks-filter: local ranks shown on the console; empty: all
  std::string events_path;          // JSON lines; empty: none
  // Where this run records its processes for a successor to sweep (--rdzv-id without --log-dir);
  // empty: <run_dir>/processes.json.
  std::filesystem::path processes_file;
  // RAM (+ swap) of each rank, enforced by its memory cgroup (launcher/workers/cgroup.hpp); nullopt: none.
  std::optional<std::uint64_t> memory_limit_per_rank;
  std::vector<int> handled_signals;
  std::string backend = "gloo";
  EnvMap base_env;
  // --rdzv-backend c10d: node rank, node count and world size come from each rendezvous round
  // (plan.nproc_per_node stays this node's); the workers' store is the rendezvous host's.
  std::optional<RendezvousConfig> dynamic;
  // This node's name in "[host:rank]" log prefixes and the failure summary; empty: the host name.
  std::string node_name;
  // Metrics (metrics.csv in run_dir) from @ddp-metric lines and these --metric patterns; a
  // remove_run_dir run that recorded any keeps its run_dir and says where it is.
  std::vector<MetricPattern> metric_patterns;
  GpuWatchConfig gpu_watch;
  // --straggler-threshold: a rank whose step rate stays under this × the median is reported
  // (launcher/hang/straggler_detector.hpp); nullopt: off.
  std::optional<double> straggler_threshold = 0.75;
  bool virtual_local_rank = false;             // --virtual-local-rank (WorkerEnvInput::virtual_local_rank)
  std::vector<std::vector<int>> cpu_affinity;  // --numa-binding: CPUs per local rank; empty: inherited
  // $TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE (launcher/workers/rank_log_lines.hpp); empty: [rank N]: / [host:rank]:
  std::string line_prefix_template;
  // --duplicate-stdout/stderr-filters: matching lines also go to run_dir/attempt_N/filtered_*.log.
  DuplicateFilters duplicate_filters;
  // --warm-start: restarts fork the Python ranks from a warm process (launcher/supervisor/warm_start.hpp).
  bool warm_start = false;

  // Log files under run_dir: a redirected or teed stream's per-rank files, or the filtered logs.
  bool writes_log_files() const;
};

struct SupervisorPolicy;  // launcher/supervisor/supervisor_machine.hpp

// The machine's policy from the config: restarts, grace, backoff; under a dynamic rendezvous a
// failed group always rejoins (the round decides the charge) and the job ends at an exit barrier.
SupervisorPolicy supervisor_policy(const SupervisorConfig& config);

// The worker environment's input for one rank (restart_count: the attempt, or the dynamic
// rendezvous' round; filestore: --store file's path, else ignored).
WorkerEnvInput worker_env_input(const SupervisorConfig& config, const RankAssignment& ranks,
                                const std::string& master_addr, std::uint16_t master_port, int restart_count,
                                const std::string& error_file, const std::string& filestore);

// run.json's first fields: world size, nodes, command, batch policy (DDP_* in the base env).
nlohmann::json describe_run(const SupervisorConfig& c, const std::vector<RankAssignment>& plan);
// $CUDA_VISIBLE_DEVICES of the base env, if set.
std::optional<std::string> cuda_visible_devices(const SupervisorConfig& c);

}  // namespace ddp::launcher
