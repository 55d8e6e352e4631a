// The rules of `ddp-launch run`'s options (torchrun's, and ours), as one pure function: plan_run.
#include "launcher/run/run_options.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "common/duration.hpp"
#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "common/net.hpp"
#include "common/signals.hpp"
#include "launcher/hang/straggler_detector.hpp"
#include "launcher/outputs/run_record.hpp"
#include "launcher/run/argv_lint.hpp"
#include "launcher/run/python_choice.hpp"
#include "launcher/run/rdzv_conf.hpp"
#include "launcher/run/run_option_table.hpp"
#include "launcher/workers/batch_policy.hpp"
#include "launcher/workers/cgroup.hpp"
#include "launcher/workers/numa_binding.hpp"
#include "launcher/workers/rank_log_lines.hpp"
#include "slurm/slurm.hpp"
#include "store/filestore.hpp"

namespace ddp::launcher {

std::optional<std::vector<std::string>> warm_python_command(const std::vector<std::string>& command) {
  if (command.size() < 2) return std::nullopt;
  const std::string name = std::filesystem::path(command[0]).filename().string();
  // python, python3, python3.11 (not python3-config, pythonw …): what `python -u script` runs as.
  if (name.rfind("python", 0) != 0 || name.find_first_not_of("0123456789.", 6) != std::string::npos) {
    return std::nullopt;
  }
  std::vector<std::string> argv = {command[0], "-u"};
  std::size_t next = command[1] == "-u" ? 2 : 1;
  argv.insert(argv.end(), command.begin() + static_cast<std::ptrdiff_t>(next), command.end());
  if (argv.size() < 3) return std::nullopt;
  if (argv[2] == "-m") {
    if (argv.size() < 4 || argv[3].empty() || argv[3][0] == '-') return std::nullopt;
  } else if (argv[2].empty() || argv[2][0] == '-') {
    return std::nullopt;  // -c, -X, -O …: a command line warm_start.py does not run as python would
  }
  return argv;
}

namespace {

int positive_int(const std::string& value, int& out) {
  try {
    std::size_t used = 0;
    int n = std::stoi(value, &used);
    if (used == value.size() && n >= 1) return out = n;
  } catch (const std::exception&) {
  }
  return 0;
}

int parse_nproc(const std::string& value, const HostFacts& facts, RunPlan& plan) {
  const int cpus = std::max(1, facts.cpu_count);
  if (value == "cpu") return cpus;
  if (value == "gpu" || value == "auto") {
    auto [gpus, why_not] =
        facts.count_gpus ? facts.count_gpus() : std::pair{std::optional<int>(), std::string("no NVML")};
    if (gpus && *gpus > 0) return *gpus;
    if (value == "auto") {
      plan.info.push_back(fmt::format("--nproc-per-node auto: no GPUs ({}), using one rank per CPU",
                                      gpus ? "NVML reports 0" : why_not));
      return cpus;
    }
    throw UsageError(fmt::format("--nproc-per-node gpu: no GPU found ({}). Use a number, 'cpu' or 'auto'.",
                                 gpus ? "NVML reports 0 devices" : why_not));
  }
  int n = 0;
  if (positive_int(value, n)) return n;
  throw UsageError(fmt::format("--nproc-per-node '{}' is not a positive number, 'cpu', 'gpu' or 'auto'", value));
}

// --nnodes N, or MIN:MAX (c10d only; N:N is N).
std::pair<int, int> parse_nnodes(const std::string& value, bool dynamic) {
  auto count = [&](const std::string& v, const char* what) {
    int n = 0;
    if (positive_int(v, n)) return n;
    if (std::strlen(what) == 0) throw UsageError(fmt::format("--nnodes '{}' is not a positive number", value));
    throw UsageError(fmt::format("--nnodes: {} '{}' is not a positive number", what, v));
  };
  auto colon = value.find(':');
  if (colon == std::string::npos) {
    int n = count(value, dynamic ? "count" : "");
    return {n, n};
  }
  int lo = count(value.substr(0, colon), "MIN");
  int hi = count(value.substr(colon + 1), "MAX");
  if (lo > hi) throw UsageError(fmt::format("--nnodes {}: MIN is larger than MAX", value));
  if (lo != hi && !dynamic) {
    throw UsageError(
        fmt::format("--nnodes {}: elastic MIN:MAX membership needs --rdzv-backend c10d; give a fixed "
                    "node count or add --rdzv-backend c10d --rdzv-endpoint HOST[:PORT]",
                    value));
  }
  return {lo, hi};
}

struct Endpoint {
  std::string host;
  std::optional<std::uint16_t> port;
};

// --rdzv-endpoint HOST[:PORT] (IPv6 as [ADDR]), parsed once for both backends.
std::optional<Endpoint> parse_endpoint(const std::string& value) {
  if (value.empty()) return std::nullopt;
  auto parsed = net::parse_host_port(value, {.port_required = false});
  if (!parsed.value) throw UsageError(fmt::format("--rdzv-endpoint '{}': {}", value, parsed.problem));
  return Endpoint{parsed.value->host, parsed.value->port};
}

std::vector<int> parse_signals(const std::string& list) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    auto comma = list.find(',', start);
    auto name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (name.empty()) continue;
    const int found = sig::signal_number(name).value_or(0);
    if (found == 0 || found == sig::kKill || found == sig::kStop || found == sig::kChld) {
      throw UsageError(
          fmt::format("--signals-to-handle: '{}' is not a signal that can be handled "
                      "(e.g. SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1)",
                      name));
    }
    out.push_back(found);
  }
  return out;
}

// Under srun: node count, node rank, store host and port, run id from SLURM_* in facts.env, each
// unless given as a flag (or PET_*). True when the node rank came from Slurm.
bool take_from_slurm(RunArgs& a, const HostFacts& facts, RunPlan& plan) {
  if (a.no_slurm) return false;
  auto task = slurm::read_slurm_env(facts.env);
  if (!task) return false;
  const auto endpoint = parse_endpoint(a.rdzv_endpoint);
  slurm::ExplicitFlags flags{a.was_given("--nnodes"),
                             a.was_given("--node-rank"),
                             a.was_given("--master-addr") || endpoint.has_value(),
                             a.was_given("--master-port") || (endpoint && endpoint->port),
                             a.was_given("--rdzv-id"),
                             a.standalone};
  auto topo = slurm::plan_from_slurm(*task, flags);
  if (topo.master_node && facts.resolve_slurm_node) {
    topo.master_addr = facts.resolve_slurm_node(*topo.master_node);
    topo.summary += fmt::format(" (store host {} is {})", *topo.master_node, *topo.master_addr);
  }
  if (!topo.summary.empty()) (topo.warning ? plan.warnings : plan.info).push_back(topo.summary);
  if (topo.nnodes) a.nnodes = std::to_string(*topo.nnodes);
  if (topo.node_rank) a.node_rank = *topo.node_rank;
  if (topo.master_addr) a.master_addr = *topo.master_addr;
  if (topo.master_port) a.master_port = *topo.master_port;
  if (topo.rdzv_id) a.rdzv_id = *topo.rdzv_id;
  if (a.rdzv_backend == "c10d" && a.rdzv_endpoint.empty() && a.master_port != 0) {
    a.rdzv_endpoint = fmt::format("{}:{}", a.master_addr, a.master_port);
  }
  return topo.node_rank.has_value();
}

void check_command(const RunArgs& a) {
  if (a.command.empty()) throw UsageError("no training script given: ddp-launch run [options] SCRIPT [args...]");
  // CLI11 hands everything from the first unrecognised argument on to the worker: a mistyped
  // option before the script would otherwise become the worker's command line.
  if (a.command.front().size() > 1 && a.command.front()[0] == '-') {
    throw UsageError(
        fmt::format("unknown option '{}' (see ddp-launch run --help); the script and its own "
                    "arguments come after the launcher's options",
                    a.command.front()));
  }
  if (a.no_python && a.module && !a.run_path) throw UsageError("--no-python and --module cannot be combined");
}

// Newer torchrun flags accepted for compatibility whose effect differs here.
void check_unsupported(const RunArgs& a, RunPlan& plan) {
  if (!a.logs_specs.empty()) {
    plan.warnings.push_back(
        fmt::format("--logs-specs {}: accepted for torchrun compatibility; ddp-launch writes "
                    "its own layout (--log-dir DIR/<run id>_<random>/attempt_N/<local rank>/)",
                    a.logs_specs));
  }
}

// --rdzv-backend c10d: node rank and node count come from each round.
void plan_dynamic(const RunArgs& a, bool slurm_node_rank, SupervisorConfig& c, RunPlan& plan) {
  RendezvousConfig rc;
  auto [lo, hi] = parse_nnodes(a.nnodes, true);
  rc.policy.min_nodes = lo;
  rc.policy.max_nodes = hi;
  auto endpoint = parse_endpoint(a.rdzv_endpoint);
  if (!endpoint) {
    throw UsageError(
        "--rdzv-backend c10d needs --rdzv-endpoint HOST[:PORT] (the host that runs the "
        "rendezvous store; port 29400 by default)");
  }
  rc.endpoint_host = endpoint->host;
  if (endpoint->port) rc.endpoint_port = *endpoint->port;
  rc.run_id = a.rdzv_id;
  for (auto& w : apply_rdzv_conf(a.rdzv_conf, rc)) plan.warnings.push_back(std::move(w));
  rc.rank_hint = a.was_given("--node-rank") || slurm_node_rank ? a.node_rank : -1;
  c.dynamic = rc;
  c.plan.nnodes = 1;
  c.plan.node_rank = 0;
  // Until a round assigns them: --master-addr/--master-port as given (or from Slurm).
  if (a.master_port < 0 || a.master_port > 65535) {
    throw UsageError(fmt::format("--master-port {} is outside 0..65535", a.master_port));
  }
  c.master_addr = a.master_addr;
  c.master_port = static_cast<std::uint16_t>(a.master_port);
}

// --rdzv-backend static: --nnodes N, --node-rank, the store at --master-addr:--master-port (or
// the --rdzv-endpoint HOST:PORT).
void plan_static(const RunArgs& a, SupervisorConfig& c) {
  if (!a.rdzv_conf.empty()) throw UsageError("--rdzv-conf is for --rdzv-backend c10d");
  c.plan.nnodes = parse_nnodes(a.nnodes, false).first;
  c.plan.node_rank = a.node_rank;
  if (a.node_rank < 0 || a.node_rank >= c.plan.nnodes) {
    throw UsageError(
        fmt::format("--node-rank {} is outside 0..{} (--nnodes {})", a.node_rank, c.plan.nnodes - 1, c.plan.nnodes));
  }
  c.master_addr = a.master_addr;
  int port = a.master_port;
  if (auto endpoint = parse_endpoint(a.rdzv_endpoint)) {
    c.master_addr = endpoint->host;
    if (endpoint->port) port = *endpoint->port;
  }
  if (port < 0 || port > 65535) throw UsageError(fmt::format("--master-port {} is outside 0..65535", port));
  c.master_port = static_cast<std::uint16_t>(port);
  if (c.plan.nnodes > 1 && c.master_port == 0) {
    throw UsageError("several nodes need an agreed store port: pass --master-port (and --master-addr of node 0)");
  }
}

void plan_store(const RunArgs& a, const HostFacts& facts, SupervisorConfig& c) {
  std::string store = a.store;
  if (a.was_given("--filestore")) {
    if (a.was_given("--store") && store != "file") {
      throw UsageError(fmt::format("--filestore needs --store file, not --store {}", store));
    }
    std::string path = a.filestore;
    if (path.rfind("file://", 0) == 0) {
      path = store::path_from_file_url(path, facts.windows ? store::PathStyle::Windows : store::PathStyle::Posix)
                 .value_or("");
    }
    if (path.empty()) throw UsageError("--filestore: give a path");
    store = "file";
    c.filestore_path = path;
  }
  c.store_mode = store == "rank0" ? StoreMode::Rank0 : store == "file" ? StoreMode::File : StoreMode::Agent;
  if (c.dynamic && c.store_mode != StoreMode::Agent) {
    throw UsageError("--rdzv-backend c10d runs the workers' store itself: --store agent only");
  }
  if (c.store_mode == StoreMode::File && c.plan.nnodes > 1) {
    throw UsageError("--store file is for one node (a FileStore on a shared filesystem is not supported yet)");
  }
}

// Streams, console filter, restarts, signals, memory, metrics, the GPU watch.
void plan_supervision(const RunArgs& a, SupervisorConfig& c) {
  const int nproc = c.plan.nproc_per_node;
  c.redirects = parse_std_streams(a.redirects, nproc, "--redirects");
  c.tee = parse_std_streams(a.tee, nproc, "--tee");
  c.console_ranks = parse_local_ranks_filter(a.local_ranks_filter, nproc);
  c.max_restarts = a.max_restarts;
  c.rendezvous_timeout =
      ddp::seconds_to_millis_in(run_option_seconds(a, "--rdzv-timeout"), {0, ddp::kMaxDurationS}, "--rdzv-timeout");
  c.hang_timeout = parse_hang_timeout(a.hang_timeout);
  c.restart_on_hang = a.on_hang == "restart";
  c.max_no_progress_restarts = a.max_no_progress_restarts;
  c.budget_mode = a.restart_budget == "progress" ? BudgetMode::Progress : BudgetMode::Count;
  c.checkpoint_file = a.checkpoint_file;
  c.min_restart_interval = ddp::seconds_to_millis_in(run_option_seconds(a, "--min-restart-interval"),
                                                     {0, ddp::kMaxDurationS}, "--min-restart-interval");
  c.gpu_release_timeout = ddp::seconds_to_millis_in(run_option_seconds(a, "--gpu-release-timeout"),
                                                    {0, ddp::kMaxDurationS}, "--gpu-release-timeout");
  c.events_path = a.events;
  c.handled_signals = parse_signals(a.signals_to_handle);
  c.backend = a.backend;
  if (!a.memory_limit_per_rank.empty()) {
    c.memory_limit_per_rank = parse_memory_size(a.memory_limit_per_rank);
    if (!c.memory_limit_per_rank) {
      throw UsageError(
          fmt::format("--memory-limit-per-rank '{}' is not a size (e.g. 512M, 4G)", a.memory_limit_per_rank));
    }
  }
  for (const auto& spec : a.metrics) c.metric_patterns.push_back(parse_metric_pattern(spec));
  c.gpu_watch.interval = parse_duration(a.gpu_watch_interval, "--gpu-watch-interval");
  c.gpu_watch.low_util_percent = a.gpu_low_util;
  c.gpu_watch.low_window = parse_duration(a.gpu_low_window, "--gpu-low-window");
  c.straggler_threshold = parse_straggler_threshold(a.straggler_threshold);
}

// --shutdown-grace, or torchrun's --shutdown-timeout / $TORCH_ELASTIC_SHUTDOWN_TIMEOUT.
std::chrono::milliseconds plan_shutdown_grace(const RunArgs& a, const HostFacts& facts) {
  double seconds = run_option_seconds(a, "--shutdown-grace");
  const char* source = "--shutdown-grace";
  if (!a.was_given("--shutdown-grace")) {
    for (const char* var : {"PET_SHUTDOWN_TIMEOUT", "TORCH_ELASTIC_SHUTDOWN_TIMEOUT"}) {
      auto it = facts.env.find(var);
      if (it == facts.env.end() || it->second.empty()) continue;
      source = var;
      try {
        std::size_t used = 0;
        seconds = std::stod(it->second, &used);
        if (used != it->second.size()) seconds = -1;
      } catch (const std::exception&) {
        seconds = -1;
      }
      if (seconds < 0) {
        throw UsageError(fmt::format("{}={} is not a number of seconds: unset it or give e.g. 30", var, it->second));
      }
      break;
    }
  }
  if (seconds < 0) throw UsageError(fmt::format("{} {} is negative: give seconds, e.g. 30", source, seconds));
  return ddp::seconds_to_millis_in(seconds, {0, ddp::kMaxDurationS}, source);  // inf, nan, 1e300: an error
}

void plan_batch_policy(const RunArgs& a, SupervisorConfig& c, RunPlan& plan) {
  // The batch policy needs the job's world size: with c10d rounds, only a fixed node count gives one.
  int batch_nodes = c.plan.nnodes;
  if (c.dynamic)
    batch_nodes = c.dynamic->policy.min_nodes == c.dynamic->policy.max_nodes ? c.dynamic->policy.min_nodes : 0;
  if (batch_nodes == 0 && (a.global_batch || a.per_rank_batch)) {
    throw UsageError(
        "--global-batch/--per-rank-batch need a fixed world size, and --nnodes MIN:MAX changes it per "
        "rendezvous round: give --nnodes N (or read WORLD_SIZE in the script)");
  }
  // No batch flags with elastic rounds (refused above when given): plan for one node, which only
  // checks the remaining flags (e.g. --lr-warmup-steps without a policy).
  if (batch_nodes == 0) batch_nodes = 1;
  if (auto batch = launcher::plan_batch(
          {a.global_batch, a.per_rank_batch, a.lr_warmup_steps, batch_nodes * c.plan.nproc_per_node, batch_nodes})) {
    for (const auto& [k, v] : batch->env()) c.base_env[k] = v;
    plan.info.push_back(batch->summary());
  }
}

std::string path_safe(std::string id) {
  for (char& ch : id) {
    if (ch == '/') ch = '_';
  }
  return id;
}

// --run-dir, --log-dir (a fresh <run_id>_<random> inside it, made by the shell), or a temporary one.
void plan_run_dir(const RunArgs& a, const HostFacts& facts, SupervisorConfig& c, RunPlan& plan) {
  if (!a.run_dir.empty()) {
    if (!a.log_dir.empty() && std::filesystem::path(a.run_dir) != std::filesystem::path(a.log_dir)) {
      throw UsageError(
          fmt::format("--run-dir {} and --log-dir {} differ: --run-dir keeps this run's directory (metrics, "
                      "error files) at that path, --log-dir makes one per run inside it with per-rank log "
                      "files; give one of them (or the same path to both for per-rank logs in --run-dir)",
                      a.run_dir, a.log_dir));
    }
    c.run_dir = a.run_dir;
  } else if (!a.log_dir.empty()) {
    c.log_base_dir = a.log_dir;  // the shell makes the run directory last: a usage error leaves none
  } else {
    c.run_dir = facts.temp_dir / fmt::format("{}{}-{}", kRunDirPrefix, c.run_id, facts.pid);
    if (a.rdzv_id != "none") {
      // A run id names the job across restarts of the supervisor: the next one with the same id
      // finds what this one records, and sweeps what it left if it was SIGKILLed with its guardian.
      c.processes_file = run_id_record(facts.temp_dir, path_safe(a.rdzv_id), c.plan.node_rank);
    }
    const bool to_files = c.writes_log_files();
    // torchrun writes redirected and teed streams under a temporary directory without --log-dir.
    if (to_files) plan.info.push_back(fmt::format("no --log-dir: log files go under {}", c.run_dir.string()));
    c.remove_run_dir = !to_files;  // only error files and the FileStore live there: gone after the job
  }
}

// The worker's command line; argv[0] is resolved on PATH by the shell.
void plan_worker_argv(const RunArgs& a, const HostFacts& facts, RunPlan& plan) {
  auto& argv = plan.config.worker_argv;
  if (a.no_python && !a.run_path) {
    argv = a.command;
    // `auto` leaves a --no-python command cold (it may be anything); `on` asks for it, Linux only.
    if (a.warm_start != "on") return;
    if (auto warm = warm_python_command(a.command)) {
      argv = *warm;
      plan.config.warm_start = true;
    } else {
      plan.warnings.push_back(
          "--warm-start on: --no-python ranks start cold: the command is not a Python interpreter running a script "
          "or -m module (python3 train.py …, python3 -m pkg.train …)");
    }
    return;
  }
  plan.python_script = true;
  argv = {named_interpreter(a.python, facts.env), "-u"};
  if (a.run_path) {
    // torchrun's run_script_path: sys.argv = [script, *args]; runpy.run_path(script, run_name="__main__").
    if (a.module || a.no_python)
      plan.warnings.push_back("--run-path wins over --module and --no-python (as in torchrun)");
    argv.insert(argv.end(),
                {"-c", "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"});
  } else if (a.module) {
    argv.push_back("-m");
  }
  argv.insert(argv.end(), a.command.begin(), a.command.end());
  // launcher/supervisor/warm_start.hpp: `python -u script` and `python -u -m module` only.
  plan.config.warm_start = a.warm_start != "off" && !facts.windows && !a.run_path;
}

// With several nodes gloo advertises the address the host name resolves to unless
// GLOO_SOCKET_IFNAME is set. --local-addr ADDRESS (torch 2.x: the address this node advertises)
// sets it to the interface holding that address; else, when the host name resolves to loopback
// (the other nodes could not connect), to the interface that reaches the store.
void plan_gloo_interface(const RunArgs& a, const HostFacts& facts, SupervisorConfig& c, RunPlan& plan) {
  if (!(c.dynamic || c.plan.nnodes > 1) || c.base_env.count(std::string(env::kGlooSocketIfname))) return;
  if (!facts.interface_towards) return;
  const std::string var(env::kGlooSocketIfname);
  if (!a.local_addr.empty()) {
    auto ifname = facts.interface_towards(a.local_addr, 1);
    if (ifname && *ifname != "lo") {
      c.base_env[var] = *ifname;
      plan.info.push_back(
          fmt::format("--local-addr {}: the workers' gloo advertises it ({}={}, the interface "
                      "holding it; set {} yourself to choose)",
                      a.local_addr, var, *ifname, var));
      return;
    }
  }
  if (!facts.hostname_is_loopback || !facts.hostname_is_loopback()) return;
  const auto& peer = c.dynamic ? c.dynamic->endpoint_host : c.master_addr;
  auto ifname = facts.interface_towards(peer, c.dynamic ? c.dynamic->endpoint_port : c.master_port);
  if (!ifname || *ifname == "lo") return;
  c.base_env[var] = *ifname;
  plan.info.push_back(fmt::format(
      "the host name resolves to a loopback address, which gloo would give the other nodes: setting {}={} (the "
      "interface that reaches {}; set it yourself to choose)",
      var, *ifname, peer));
}

// --virtual-local-rank: each rank sees its own device as device 0, so the inherited
// CUDA_VISIBLE_DEVICES (when set) must list one per local rank.
void plan_virtual_local_rank(const RunArgs& a, SupervisorConfig& c) {
  c.virtual_local_rank = a.virtual_local_rank;
  if (!a.virtual_local_rank) return;
  auto it = c.base_env.find(std::string(env::kCudaVisibleDevices));
  if (it == c.base_env.end()) return;
  const int listed =
      it->second.empty() ? 0 : static_cast<int>(std::count(it->second.begin(), it->second.end(), ',')) + 1;
  if (listed < c.plan.nproc_per_node) {
    throw UsageError(
        fmt::format("--virtual-local-rank gives each of the {} local ranks one device of {}={}, which "
                    "lists {}: give --nproc-per-node {} or list more devices",
                    c.plan.nproc_per_node, env::kCudaVisibleDevices, it->second, listed, listed));
  }
}

// --numa-binding MODE: the CPUs of each local rank (set between fork and exec).
void plan_numa_binding(const RunArgs& a, const HostFacts& facts, SupervisorConfig& c, RunPlan& plan) {
  if (a.numa_binding.empty()) return;
  c.cpu_affinity = numa_cpu_sets(a.numa_binding, c.plan.nproc_per_node,
                                 facts.numa_nodes ? facts.numa_nodes() : std::vector<NumaNode>{});
  std::string sets;
  for (std::size_t i = 0; i < c.cpu_affinity.size(); ++i) {
    const auto& cpus = c.cpu_affinity[i];
    sets += fmt::format("{}local rank {}: {} CPU(s) from {}", i ? "; " : "", i, cpus.size(), cpus.front());
  }
  plan.info.push_back(fmt::format("--numa-binding {}: {}", a.numa_binding, sets));
}

// --duplicate-stdout/stderr-filters and $TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE: torch 2.x's
// console prefix and filtered logs (launcher/workers/rank_log_lines.hpp).
void plan_log_lines(const RunArgs& a, const HostFacts& facts, SupervisorConfig& c, RunPlan& plan) {
  for (auto [value, flag, out] :
       {std::tuple{&a.duplicate_stdout_filters, "--duplicate-stdout-filters", &c.duplicate_filters.stdout_filters},
        std::tuple{&a.duplicate_stderr_filters, "--duplicate-stderr-filters", &c.duplicate_filters.stderr_filters}}) {
    bool empty_dropped = false;
    *out = split_duplicate_filters(*value, &empty_dropped);
    if (empty_dropped) {
      plan.warnings.push_back(
          fmt::format("{} '{}': empty filters are ignored (torchrun would copy every line); "
                      "write ',,' for a comma inside a filter",
                      flag, *value));
    }
  }
  if (auto it = facts.env.find("TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"); it != facts.env.end()) {
    c.line_prefix_template = it->second;
    auto unknown = unknown_line_prefix_names(it->second);
    if (!unknown.empty()) {
      plan.warnings.push_back(fmt::format(
          "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE={}: unknown name(s) ${{{}}}, printed as written (as torchrun "
          "does); the names substituted per rank are ${{role_name}}, ${{rank}} and ${{local_rank}} ($$ is a $)",
          it->second, fmt::join(unknown, "}, ${")));
    }
  }
}

void plan_environment(const RunArgs& a, const HostFacts& facts, SupervisorConfig& c, RunPlan& plan) {
  c.base_env = facts.env;
  if (facts.windows) {
    // torch's Windows wheels have no libuv, yet its TCPStore asks for it by default since 2.4
    // ("use_libuv was requested but PyTorch was built without libuv support", pytorch#139990);
    // init_process_group defaults it to 0 there since #148266, torch's rendezvous paths do not.
    c.base_env.try_emplace(std::string(env::kUseLibuv), "0");
    c.numeric_master_addr = true;  // gloo on Windows and host names: pytorch#80638
  }
  plan_virtual_local_rank(a, c);
  plan_numa_binding(a, facts, c, plan);
  plan_batch_policy(a, c, plan);
  plan_gloo_interface(a, facts, c, plan);
  if (auto omp = omp_threads_default(c.base_env, c.plan.nproc_per_node)) {
    plan.info.push_back(
        fmt::format("{} is unset and {} ranks share this node: setting it to {} for every worker "
                    "(set it yourself to choose)",
                    env::kOmpNumThreads, c.plan.nproc_per_node, *omp));
  }
}

}  // namespace

// One duration syntax for flags and job files (common/duration.hpp): 500ms, 60, 60s, 2m, 2h, 1d.
std::chrono::milliseconds parse_duration(const std::string& value, const char* flag) {
  const double seconds = ddp::parse_duration_in(value, {0, ddp::kMaxDurationS}, flag);
  return std::chrono::milliseconds(static_cast<long>(seconds * 1000 + 0.5));
}

namespace {

// The Windows build lacks cgroups and NUMA binding (docs/windows.md): the flags that need them are
// refused before anything starts, naming what to do instead.
void check_windows(const RunArgs& a, const HostFacts& facts) {
  if (!facts.windows) return;
  if (a.warm_start == "on") {
    throw UsageError(
        "--warm-start on is Linux only (Windows has no fork: a process cannot be copied with its imports); "
        "use --warm-start auto or off");
  }
  check_linux_only_options(a);
}

}  // namespace

RunPlan plan_run(const RunArgs& args, const HostFacts& facts) {
  RunArgs a = args;
  RunPlan plan;
  check_run_option_values(a);  // the table's ranges and choices (CLI11 checked them already on the command line)
  check_command(a);
  check_unsupported(a, plan);
  check_windows(a, facts);
  const bool slurm_node_rank = !facts.windows && take_from_slurm(a, facts, plan);
  auto& c = plan.config;
  c.node_name = a.local_addr;
  if (a.rdzv_backend == "c10d") {
    plan_dynamic(a, slurm_node_rank, c, plan);
  } else {
    plan_static(a, c);
  }
  c.plan.nproc_per_node = parse_nproc(a.nproc_per_node, facts, plan);
  c.plan.role = a.role;
  if (c.dynamic) c.dynamic->nproc = c.plan.nproc_per_node;
  plan_store(a, facts, c);
  plan_supervision(a, c);
  c.shutdown_grace = plan_shutdown_grace(a, facts);
  c.run_id = a.rdzv_id == "none" && a.standalone ? facts.random_id : a.rdzv_id;
  plan_environment(a, facts, c, plan);
  plan_log_lines(a, facts, c, plan);
  plan_run_dir(a, facts, c, plan);
  plan_worker_argv(a, facts, plan);
  int world = c.plan.nnodes * c.plan.nproc_per_node;
  if (c.dynamic) {
    const auto& p = c.dynamic->policy;
    world = p.min_nodes == p.max_nodes ? p.min_nodes * c.plan.nproc_per_node
                                       : (p.max_nodes > 1 ? 0 : c.plan.nproc_per_node);
  }
  if (auto lint = literal_rank_warning(a.command, world, c.plan.nproc_per_node)) {
    plan.warnings.push_back(*lint);
    plan.failure_hint = *lint;
  }
  return plan;
}

}  // namespace ddp::launcher
