// `ddp-launch run`: the supervisor, a drop-in for torchrun (same flags, dash and underscore
// spellings, PET_* environment overrides, same worker environment).
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <boost/process/search_path.hpp>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <thread>

#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "common/gpu.hpp"
#include "common/net.hpp"
#include "launcher/batch_policy.hpp"
#include "launcher/cgroup.hpp"
#include "launcher/commands.hpp"
#include "launcher/filestore_guard.hpp"
#include "launcher/slurm.hpp"
#include "launcher/supervisor.hpp"

extern char** environ;

namespace ddp::cli {
namespace {

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
  double shutdown_grace = 30;
  double rdzv_timeout = 600;
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
  std::vector<std::string> command;
};

// "60s", "500ms", "2m" or a plain number of seconds.
std::chrono::milliseconds parse_duration(const std::string& value, const char* flag) {
  std::size_t used = 0;
  double n = -1;
  try {
    n = std::stod(value, &used);
  } catch (const std::exception&) {
  }
  auto unit = value.substr(used);
  double scale = unit.empty() || unit == "s" ? 1000 : unit == "ms" ? 1 : unit == "m" ? 60000 : -1;
  if (n < 0 || scale < 0) {
    throw UsageError(fmt::format("{} '{}' is not a duration: give seconds, e.g. 60, 60s, 500ms or 2m", flag, value));
  }
  return std::chrono::milliseconds(static_cast<long>(n * scale));
}

int parse_nproc(const std::string& value) {
  if (value == "cpu") return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (value == "gpu" || value == "auto") {
    auto gpus = gpu::count_gpus();
    if (gpus.count && *gpus.count > 0) return *gpus.count;
    if (value == "auto") {
      spdlog::info("--nproc-per-node auto: no GPUs ({}), using one rank per CPU",
                   gpus.count ? "NVML reports 0" : gpus.why_not);
      return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    }
    throw UsageError(fmt::format("--nproc-per-node gpu: no GPU found ({}). Use a number, 'cpu' or 'auto'.",
                                 gpus.count ? "NVML reports 0 devices" : gpus.why_not));
  }
  try {
    std::size_t used = 0;
    int n = std::stoi(value, &used);
    if (used == value.size() && n >= 1) return n;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--nproc-per-node '{}' is not a positive number, 'cpu', 'gpu' or 'auto'", value));
}

int parse_count(const std::string& value, const char* what) {
  try {
    std::size_t used = 0;
    int n = std::stoi(value, &used);
    if (used == value.size() && n >= 1) return n;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--nnodes: {} '{}' is not a positive number", what, value));
}

// --nnodes N or MIN:MAX for the c10d backend.
std::pair<int, int> parse_nnodes_range(const std::string& value) {
  auto colon = value.find(':');
  if (colon == std::string::npos) {
    int n = parse_count(value, "count");
    return {n, n};
  }
  int lo = parse_count(value.substr(0, colon), "MIN");
  int hi = parse_count(value.substr(colon + 1), "MAX");
  if (lo > hi) throw UsageError(fmt::format("--nnodes {}: MIN is larger than MAX", value));
  return {lo, hi};
}

double conf_seconds(const std::string& key, const std::string& value) {
  try {
    std::size_t used = 0;
    double v = std::stod(value, &used);
    if (used == value.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--rdzv-conf {}={}: give a positive number of seconds", key, value));
}

// torchrun's --rdzv-conf "k=v,k=v": join_timeout, last_call_timeout, keep_alive_interval,
// keep_alive_max_attempt, is_host, read_timeout (accepted); ours: heartbeat_timeout, exit_barrier_timeout,
// store_lost_timeout.
void apply_rdzv_conf(const std::string& conf, launcher::RendezvousConfig& rc) {
  double keep_alive = -1, attempts = 3, heartbeat = -1;
  std::size_t start = 0;
  while (start < conf.size()) {
    auto comma = conf.find(',', start);
    auto item = conf.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? conf.size() : comma + 1;
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) throw UsageError(fmt::format("--rdzv-conf: '{}' is not key=value", item));
    auto key = item.substr(0, eq), value = item.substr(eq + 1);
    auto ms = [](double s) { return std::chrono::milliseconds(static_cast<long>(s * 1000)); };
    if (key == "join_timeout") {
      rc.policy.join_timeout = ms(conf_seconds(key, value));
    } else if (key == "last_call_timeout") {
      rc.policy.last_call = ms(conf_seconds(key, value));
    } else if (key == "heartbeat_timeout") {
      heartbeat = conf_seconds(key, value);
    } else if (key == "keep_alive_interval") {
      keep_alive = conf_seconds(key, value);
    } else if (key == "keep_alive_max_attempt") {
      attempts = conf_seconds(key, value);
    } else if (key == "exit_barrier_timeout") {
      rc.exit_barrier = ms(conf_seconds(key, value));
    } else if (key == "store_lost_timeout") {
      rc.store_lost_timeout = ms(conf_seconds(key, value));
    } else if (key == "is_host") {
      if (value == "1" || value == "true" || value == "True")
        rc.is_host = true;
      else if (value == "0" || value == "false" || value == "False")
        rc.is_host = false;
      else
        throw UsageError(fmt::format("--rdzv-conf is_host={}: give true or false", value));
    } else if (key == "read_timeout" || key == "timeout" || key == "store_type" || key == "use_libuv") {
      // torchrun's; nothing here depends on them
    } else {
      throw UsageError(
          fmt::format("--rdzv-conf: unknown key '{}' (known: join_timeout, last_call_timeout, "
                      "heartbeat_timeout, keep_alive_interval, keep_alive_max_attempt, is_host, "
                      "exit_barrier_timeout, store_lost_timeout)",
                      key));
    }
  }
  if (heartbeat > 0) {
    rc.policy.heartbeat_timeout = std::chrono::milliseconds(static_cast<long>(heartbeat * 1000));
  } else if (keep_alive > 0) {
    rc.policy.heartbeat_timeout = std::chrono::milliseconds(static_cast<long>(keep_alive * attempts * 1000));
  }
}

int parse_nnodes(const std::string& value) {
  auto colon = value.find(':');
  if (colon != std::string::npos) {
    if (value.substr(0, colon) == value.substr(colon + 1)) return parse_nnodes(value.substr(0, colon));
    throw UsageError(fmt::format("--nnodes {}: elastic MIN:MAX membership needs --rdzv-backend c10d, which is "
                                 "not available yet; give a fixed node count",
                                 value));
  }
  try {
    std::size_t used = 0;
    int n = std::stoi(value, &used);
    if (used == value.size() && n >= 1) return n;
  } catch (const std::exception&) {
  }
  throw UsageError(fmt::format("--nnodes '{}' is not a positive number", value));
}

std::vector<int> parse_signals(const std::string& list) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= list.size()) {
    auto comma = list.find(',', start);
    auto name = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() + 1 : comma + 1;
    if (name.empty()) continue;
    std::string bare = name.rfind("SIG", 0) == 0 ? name.substr(3) : name;
    int found = 0;
    for (int s = 1; s < NSIG; ++s) {
      const char* abbrev = ::sigabbrev_np(s);
      if (abbrev && bare == abbrev) found = s;
    }
    if (found == 0 || found == SIGKILL || found == SIGSTOP || found == SIGCHLD) {
      throw UsageError(fmt::format("--signals-to-handle: '{}' is not a signal that can be handled "
                                   "(e.g. SIGTERM,SIGINT,SIGHUP,SIGQUIT,SIGUSR1)",
                                   name));
    }
    out.push_back(found);
  }
  return out;
}

std::string resolve_program(const std::string& program, const char* what) {
  if (program.find('/') != std::string::npos) {
    if (::access(program.c_str(), X_OK) != 0) {
      throw UsageError(fmt::format("{} '{}' is not an executable file", what, program));
    }
    return program;
  }
  auto found = boost::process::search_path(program);
  if (found.empty()) throw UsageError(fmt::format("{} '{}' was not found on PATH", what, program));
  return found.string();
}

std::string make_run_id() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
}

// torchrun's per-run directory inside --log-dir: <run_id>_<random>, made atomically (mkdtemp), so
// two runs sharing a --log-dir never write into each other's files.
std::filesystem::path make_run_dir_in(const std::filesystem::path& log_dir, const std::string& run_id) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  std::string id = run_id;
  for (char& ch : id) {
    if (ch == '/') ch = '_';
  }
  std::string tmpl = (log_dir / (id + "_XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) {
    throw Error(
        fmt::format("cannot create this run's directory in --log-dir {}: {}{}. Give a --log-dir you "
                    "can write to",
                    log_dir.string(), std::strerror(errno), ec ? " (" + ec.message() + ")" : ""));
  }
  return std::filesystem::absolute(tmpl);
}

// Under srun: node count, node rank, store host and port, run id from SLURM_*, each unless given as
// a flag (or PET_*). See launcher/slurm.hpp and launcher/README.md (Slurm). With c10d the store
// host and port become the endpoint every node joins at. True when the node rank came from Slurm.
bool take_from_slurm(const CLI::App& sub, RunArgs& a) {
  if (a.no_slurm) return false;
  auto given = [&](const char* name) { return sub.get_option(name)->count() > 0; };
  launcher::slurm::ExplicitFlags flags{given("--nnodes"),
                                       given("--node-rank"),
                                       given("--master-addr") || !a.rdzv_endpoint.empty(),
                                       given("--master-port") || a.rdzv_endpoint.find(':') != std::string::npos,
                                       given("--rdzv-id"),
                                       a.standalone};
  auto topo = launcher::slurm::topology_from_environment(flags);
  if (!topo) return false;
  if (topo->nnodes) a.nnodes = std::to_string(*topo->nnodes);
  if (topo->node_rank) a.node_rank = *topo->node_rank;
  if (topo->master_addr) a.master_addr = *topo->master_addr;
  if (topo->master_port) a.master_port = *topo->master_port;
  if (topo->rdzv_id) a.rdzv_id = *topo->rdzv_id;
  if (a.rdzv_backend == "c10d" && a.rdzv_endpoint.empty() && a.master_port != 0) {
    a.rdzv_endpoint = fmt::format("{}:{}", a.master_addr, a.master_port);
  }
  return topo->node_rank.has_value();
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Launch a DDP job: one worker per rank, like torchrun (same flags and env)");
  auto a = std::make_shared<RunArgs>();
  sub->add_option("--nproc-per-node,--nproc_per_node", a->nproc_per_node, "Ranks on this node: N, cpu, gpu or auto")
      ->envname("PET_NPROC_PER_NODE")
      ->capture_default_str();
  sub->add_option("--nnodes", a->nnodes, "Number of nodes (N)")->envname("PET_NNODES")->capture_default_str();
  sub->add_option("--node-rank,--node_rank", a->node_rank, "This node's rank")->envname("PET_NODE_RANK");
  sub->add_option("--master-addr,--master_addr", a->master_addr, "Address of node 0 (the store host)")
      ->envname("PET_MASTER_ADDR")
      ->capture_default_str();
  sub->add_option("--master-port,--master_port", a->master_port,
                  "Store port (default: a free port; required with several nodes)")
      ->envname("PET_MASTER_PORT");
  sub->add_flag("--standalone", a->standalone, "Single node with a free port (the default here anyway)")
      ->envname("PET_STANDALONE");
  sub->add_option("--max-restarts,--max_restarts", a->max_restarts, "Worker-group restarts before giving up")
      ->envname("PET_MAX_RESTARTS")
      ->capture_default_str();
  sub->add_option("--monitor-interval,--monitor_interval", a->monitor_interval,
                  "Accepted for torchrun compatibility; ddp-launch is event-driven and never polls")
      ->envname("PET_MONITOR_INTERVAL");
  sub->add_option("--role", a->role, "Role name (ROLE_NAME)")->envname("PET_ROLE")->capture_default_str();
  sub->add_option("--log-dir,--log_dir", a->log_dir, "Per-attempt, per-rank stdout/stderr/error files here")
      ->envname("PET_LOG_DIR");
  sub->add_flag("--no-python,--no_python", a->no_python, "Run the program directly, not through python")
      ->envname("PET_NO_PYTHON");
  sub->add_flag("-m,--module", a->module, "Run a Python module (python -m)")->envname("PET_MODULE");
  sub->add_option("--start-method,--start_method", a->start_method, "Accepted for torchrun compatibility")
      ->envname("PET_START_METHOD");
  sub->add_option("--rdzv-backend,--rdzv_backend", a->rdzv_backend,
                  "static (--node-rank, node 0 hosts the store) or c10d (dynamic: nodes join rounds, "
                  "--nnodes MIN:MAX)")
      ->envname("PET_RDZV_BACKEND")
      ->capture_default_str();
  sub->add_option("--rdzv-endpoint,--rdzv_endpoint", a->rdzv_endpoint, "host:port of the store (static backend)")
      ->envname("PET_RDZV_ENDPOINT");
  sub->add_option("--rdzv-id,--rdzv_id", a->rdzv_id, "Job id (TORCHELASTIC_RUN_ID)")->envname("PET_RDZV_ID");
  sub->add_option("--rdzv-conf,--rdzv_conf", a->rdzv_conf,
                  "c10d: join_timeout=600,last_call_timeout=30,heartbeat_timeout=15 (or keep_alive_interval, "
                  "keep_alive_max_attempt),is_host=…,exit_barrier_timeout=300 (seconds)")
      ->envname("PET_RDZV_CONF");
  sub->add_option("--local-addr,--local_addr", a->local_addr,
                  "This node's name/address in the rendezvous and in [host:rank] log prefixes (default: host name)")
      ->envname("PET_LOCAL_ADDR");
  sub->add_option("--signals-to-handle,--signals_to_handle", a->signals_to_handle,
                  "Signals forwarded to every worker group")
      ->envname("PET_SIGNALS_TO_HANDLE")
      ->capture_default_str();
  auto* store_opt =
      sub->add_option("--store", a->store,
                      "agent: we host the store; rank0: the script's rank 0 hosts it; file: a FileStore file "
                      "({filestore_url}, $DDP_FILESTORE_PATH)")
          ->check(CLI::IsMember({"agent", "rank0", "file"}))
          ->capture_default_str();
  auto* filestore_opt = sub->add_option(
      "--filestore", a->filestore,
      "--store file at this fixed path (default: under the run directory); a stale file there is removed first");
  sub->add_option("-r,--redirects", a->redirects,
                  "Streams to files only: mask 1=stdout 2=stderr 3=both, or per local rank i:v,i:v")
      ->envname("PET_REDIRECTS")
      ->capture_default_str();
  sub->add_option("-t,--tee", a->tee, "Streams to files and the console: same format as --redirects")
      ->envname("PET_TEE")
      ->capture_default_str();
  sub->add_option("--local-ranks-filter,--local_ranks_filter", a->local_ranks_filter,
                  "Local ranks shown on the console, e.g. 0,2 (files are unaffected; default: all)")
      ->envname("PET_LOCAL_RANKS_FILTER");
  sub->add_option("--rdzv-timeout,--rdzv_timeout", a->rdzv_timeout,
                  "Seconds for every rank to reach the store (any --store mode); then the attempt fails naming the "
                  "ranks that did not")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  sub->add_option("--shutdown-grace,--shutdown_grace", a->shutdown_grace, "Seconds between SIGTERM and SIGKILL when stopping")
      ->capture_default_str();
  sub->add_option("--events", a->events, "Write the supervisor's life as JSON lines to FILE");
  sub->add_option("--python", a->python, "Python interpreter for the workers (default: $PYTHON_EXEC or python3)");
  sub->add_option("--backend", a->backend, "Value of the {backend} argv placeholder")->capture_default_str();
  sub->add_flag("--no-slurm", a->no_slurm, "Ignore SLURM_* (under srun: run as if outside Slurm)");
  sub->add_option("--memory-limit-per-rank", a->memory_limit_per_rank,
                  "RAM (+ swap) of each rank, e.g. 4G, through its memory cgroup (needs writable cgroups); a rank "
                  "over it is OOM-killed and the summary says so");
  sub->add_option("--run-dir", a->run_dir,
                  "Keep the run directory here (metrics.csv, run.json, error files) without per-rank log files; "
                  "default: a temporary one, kept only when metrics were recorded");
  sub->add_option("--global-batch", a->global_batch,
                                       "Batch across all ranks, split evenly (DDP_PER_RANK_BATCH = B / WORLD_SIZE, lr × 1)");
  sub->add_option("--per-rank-batch", a->per_rank_batch,
                  "Batch per rank; the global batch grows with the world size and DDP_LR_SCALE = WORLD_SIZE");
  sub->add_option("--lr-warmup-steps", a->lr_warmup_steps, "Ramp the scaled learning rate up over N steps");
  sub->add_option("--metric", a->metrics,
                  "NAME=REGEX: record a metric from matching output lines (first capture group), e.g. "
                  "loss='Loss\\s+([0-9.]+)'; repeatable. @ddp-metric lines are always recorded")
      ->allow_extra_args(false);  // one value per --metric: the script's command line follows
  sub->add_option("--gpu-watch-interval", a->gpu_watch_interval,
                  "Sample each rank's GPU (NVML) this often, e.g. 5s; 0 turns the GPU watch off")
      ->capture_default_str();
  sub->add_option("--gpu-low-util", a->gpu_low_util, "Warn once when a rank's GPU stays under this % ...")
      ->check(CLI::Range(0u, 100u))
      ->capture_default_str();
  sub->add_option("--gpu-low-window", a->gpu_low_window, "... for this long, e.g. 60s")->capture_default_str();
  // Everything from the first positional on is the worker's command line, flags included.
  sub->prefix_command();
  sub->footer("Usage: ddp-launch run [options] SCRIPT [script args...]  (or PROGRAM [args] with --no-python)");

  auto run = [a, sub, store_opt, filestore_opt]() -> int {
    a->command = sub->remaining();
    if (!a->command.empty() && a->command.front() == "--") a->command.erase(a->command.begin());
    if (a->command.empty()) {
      throw UsageError("no training script given: ddp-launch run [options] SCRIPT [args...]");
    }
    // CLI11 hands everything from the first unrecognised argument on to the worker: a mistyped
    // option before the script would otherwise become the worker's command line.
    if (a->command.front().size() > 1 && a->command.front()[0] == '-') {
      throw UsageError(fmt::format("unknown option '{}' (see ddp-launch run --help); the script and its own "
                                   "arguments come after the launcher's options",
                                   a->command.front()));
    }
    if (a->rdzv_backend != "static" && a->rdzv_backend != "c10d") {
      throw UsageError(
          fmt::format("--rdzv-backend {} is not available; use static (the default) or c10d", a->rdzv_backend));
    }
    if (a->no_python && a->module) throw UsageError("--no-python and --module cannot be combined");
    const bool slurm_node_rank = take_from_slurm(*sub, *a);
    launcher::SupervisorConfig c;
    c.node_name = a->local_addr;
    const bool dynamic = a->rdzv_backend == "c10d";
    if (dynamic) {
      // Node rank and node count come from the rounds: the plan is decided per round.
      launcher::RendezvousConfig rc;
      auto [lo, hi] = parse_nnodes_range(a->nnodes);
      rc.policy.min_nodes = lo;
      rc.policy.max_nodes = hi;
      if (a->rdzv_endpoint.empty()) {
        throw UsageError(
            "--rdzv-backend c10d needs --rdzv-endpoint HOST[:PORT] (the host that runs the "
            "rendezvous store; port 29400 by default)");
      }
      auto colon = a->rdzv_endpoint.rfind(':');
      rc.endpoint_host = a->rdzv_endpoint.substr(0, colon);
      if (colon != std::string::npos) {
        auto port = a->rdzv_endpoint.substr(colon + 1);
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos ||
            std::stoi(port) > 65535 || std::stoi(port) == 0) {
          throw UsageError(fmt::format("--rdzv-endpoint '{}': '{}' is not a port number", a->rdzv_endpoint, port));
        }
        rc.endpoint_port = static_cast<std::uint16_t>(std::stoi(port));
      }
      if (rc.endpoint_host.empty()) throw UsageError(fmt::format("--rdzv-endpoint '{}': no host", a->rdzv_endpoint));
      rc.run_id = a->rdzv_id;
      apply_rdzv_conf(a->rdzv_conf, rc);
      rc.rank_hint = sub->get_option("--node-rank")->count() > 0 || slurm_node_rank ? a->node_rank : -1;
      c.dynamic = rc;
      a->nnodes = "1";
      a->node_rank = 0;
      a->rdzv_endpoint.clear();
    } else if (!a->rdzv_conf.empty()) {
      throw UsageError("--rdzv-conf is for --rdzv-backend c10d");
    }
    c.plan.nnodes = parse_nnodes(a->nnodes);
    c.plan.node_rank = a->node_rank;
    c.plan.nproc_per_node = parse_nproc(a->nproc_per_node);
    c.plan.role = a->role;
    c.master_addr = a->master_addr;
    if (!a->rdzv_endpoint.empty()) {
      auto colon = a->rdzv_endpoint.rfind(':');
      c.master_addr = a->rdzv_endpoint.substr(0, colon);
      if (colon != std::string::npos) {
        auto port = a->rdzv_endpoint.substr(colon + 1);
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
          throw UsageError(fmt::format("--rdzv-endpoint '{}': '{}' is not a port number", a->rdzv_endpoint, port));
        }
        a->master_port = std::stoi(port);
      }
    }
    if (a->master_port < 0 || a->master_port > 65535) {
      throw UsageError(fmt::format("--master-port {} is outside 0..65535", a->master_port));
    }
    c.master_port = static_cast<std::uint16_t>(a->master_port);
    if (c.plan.nnodes > 1 && c.master_port == 0 && !dynamic) {
      throw UsageError("several nodes need an agreed store port: pass --master-port (and --master-addr of node 0)");
    }
    if (filestore_opt->count() > 0) {
      if (store_opt->count() > 0 && a->store != "file") {
        throw UsageError(fmt::format("--filestore needs --store file, not --store {}", a->store));
      }
      if (a->filestore.rfind("file://", 0) == 0) a->filestore.erase(0, 7);
      if (a->filestore.empty()) throw UsageError("--filestore: give a path");
      a->store = "file";
      c.filestore_path = a->filestore;
    }
    c.store_mode = a->store == "rank0"  ? launcher::StoreMode::Rank0
                   : a->store == "file" ? launcher::StoreMode::File
                                        : launcher::StoreMode::Agent;
    if (dynamic && c.store_mode != launcher::StoreMode::Agent) {
      throw UsageError("--rdzv-backend c10d runs the workers' store itself: --store agent only");
    }
    if (c.store_mode == launcher::StoreMode::File && c.plan.nnodes > 1) {
      throw UsageError("--store file is for one node (a FileStore on a shared filesystem is not supported yet)");
    }
    c.redirects = launcher::parse_std_streams(a->redirects, c.plan.nproc_per_node, "--redirects");
    c.tee = launcher::parse_std_streams(a->tee, c.plan.nproc_per_node, "--tee");
    c.console_ranks = launcher::parse_local_ranks_filter(a->local_ranks_filter, c.plan.nproc_per_node);
    c.max_restarts = a->max_restarts;
    c.shutdown_grace = std::chrono::milliseconds(static_cast<long>(a->shutdown_grace * 1000));
    c.rendezvous_timeout = std::chrono::milliseconds(static_cast<long>(a->rdzv_timeout * 1000));
    if (dynamic) c.dynamic->nproc = c.plan.nproc_per_node;
    c.run_id = a->rdzv_id == "none" && a->standalone ? make_run_id() : a->rdzv_id;
    c.events_path = a->events;
    c.handled_signals = parse_signals(a->signals_to_handle);
    c.backend = a->backend;
    if (!a->memory_limit_per_rank.empty()) {
      c.memory_limit_per_rank = launcher::parse_memory_size(a->memory_limit_per_rank);
      if (!c.memory_limit_per_rank) {
        throw UsageError(fmt::format("--memory-limit-per-rank '{}' is not a size (e.g. 512M, 4G)",
                                     a->memory_limit_per_rank));
      }
    }
    for (char** e = environ; *e; ++e) {
      std::string kv(*e);
      auto eq = kv.find('=');
      if (eq != std::string::npos) c.base_env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& spec : a->metrics) c.metric_patterns.push_back(launcher::parse_metric_pattern(spec));
    c.gpu_watch.interval = parse_duration(a->gpu_watch_interval, "--gpu-watch-interval");
    c.gpu_watch.low_util_percent = a->gpu_low_util;
    c.gpu_watch.low_window = parse_duration(a->gpu_low_window, "--gpu-low-window");
    // The batch policy needs the job's world size: with c10d rounds, only a fixed node count gives one.
    int batch_nodes = c.plan.nnodes;
    if (dynamic)
      batch_nodes = c.dynamic->policy.min_nodes == c.dynamic->policy.max_nodes ? c.dynamic->policy.min_nodes : 0;
    if (batch_nodes == 0 && (a->global_batch || a->per_rank_batch)) {
      throw UsageError(
          "--global-batch/--per-rank-batch need a fixed world size, and --nnodes MIN:MAX changes it per "
          "rendezvous round: give --nnodes N (or read WORLD_SIZE in the script)");
    }
    // No batch flags with elastic rounds (refused above when given): plan for one node, which only
    // checks the remaining flags (e.g. --lr-warmup-steps without a policy).
    if (batch_nodes == 0) batch_nodes = 1;
    if (auto batch = launcher::plan_batch({a->global_batch, a->per_rank_batch, a->lr_warmup_steps,
                                           batch_nodes * c.plan.nproc_per_node, batch_nodes})) {
      for (const auto& [k, v] : batch->env()) c.base_env[k] = v;
      spdlog::info("{}", batch->summary());
    }
    if (!a->run_dir.empty()) {
      if (!a->log_dir.empty() && std::filesystem::path(a->run_dir) != std::filesystem::path(a->log_dir)) {
        throw UsageError(
            fmt::format("--run-dir {} and --log-dir {} differ: --run-dir keeps this run's directory (metrics, "
                        "error files) at that path, --log-dir makes one per run inside it with per-rank log "
                        "files; give one of them (or the same path to both for per-rank logs in --run-dir)",
                        a->run_dir, a->log_dir));
      }
      c.run_dir = a->run_dir;
      c.log_to_files = !a->log_dir.empty();
    } else if (!a->log_dir.empty()) {
      // torchrun's layout: a fresh <run_id>_<random> per run inside --log-dir, so runs can share it.
      c.log_base_dir = a->log_dir;  // the run directory is made last: a usage error leaves none
      c.log_to_files = true;
    } else {
      c.run_dir = std::filesystem::temp_directory_path() / fmt::format("ddp-launch-{}-{}", c.run_id, ::getpid());
      if (a->rdzv_id != "none") {
        // A run id names the job across restarts of the supervisor: the next one with the same id
        // finds what this one records, and sweeps what it left if it was SIGKILLed with its guardian.
        std::string id = a->rdzv_id;
        for (char& ch : id) {
          if (ch == '/') ch = '_';
        }
        c.processes_file = std::filesystem::temp_directory_path() /
                           fmt::format("ddp-launch-{}-node{}.processes.json", id, c.plan.node_rank);
      }
      const bool to_files = c.writes_log_files();
      // torchrun writes redirected and teed streams under a temporary directory without --log-dir.
      if (to_files) spdlog::info("no --log-dir: per-rank log files go under {}", c.run_dir.string());
      c.remove_run_dir = !to_files;  // only error files and the FileStore live there: gone after the job
    }

    if (a->no_python) {
      c.worker_argv = a->command;
      c.worker_argv[0] = resolve_program(a->command[0], "program");
    } else {
      std::string python = a->python;
      if (python.empty()) {
        const char* exec = std::getenv("PYTHON_EXEC");
        python = exec && *exec ? exec : "python3";
      }
      c.worker_argv = {resolve_program(python, "python interpreter"), "-u"};
      if (a->module) c.worker_argv.push_back("-m");
      c.worker_argv.insert(c.worker_argv.end(), a->command.begin(), a->command.end());
    }
    if ((dynamic || c.plan.nnodes > 1) && !c.base_env.count(std::string(env::kGlooSocketIfname)) &&
        net::hostname_is_loopback()) {
      // gloo would advertise the loopback address the host name resolves to: the other nodes
      // could not connect. Use the interface that reaches the store instead.
      const auto& peer = dynamic ? c.dynamic->endpoint_host : c.master_addr;
      auto ifname = net::interface_towards(peer, dynamic ? c.dynamic->endpoint_port : c.master_port);
      if (ifname && *ifname != "lo") {
        c.base_env[std::string(env::kGlooSocketIfname)] = *ifname;
        spdlog::info("the host name resolves to a loopback address, which gloo would give the other nodes: "
                     "setting {}={} (the interface that reaches {}; set it yourself to choose)",
                     env::kGlooSocketIfname, *ifname, peer);
      }
    }
    if (auto omp = launcher::omp_threads_default(c.base_env, c.plan.nproc_per_node)) {
      spdlog::info("{} is unset and {} ranks share this node: setting it to {} for every worker "
                   "(set it yourself to choose)",
                   env::kOmpNumThreads, c.plan.nproc_per_node, *omp);
    }
    launcher::guard_user_filestores(c);  // a file:// init_method a killed run left behind
    if (!c.log_base_dir.empty()) {
      c.run_dir = make_run_dir_in(c.log_base_dir, c.run_id);
      spdlog::info("per-rank log files go under {}", c.run_dir.string());
    }
    return launcher::run_supervisor(c);
  };
  return {sub, run};
}

}  // namespace ddp::cli
