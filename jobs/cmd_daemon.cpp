// `ddp-launch daemon`: the job daemon on one Asio loop (HTTP API, job manager, supervisors).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <random>
#include <thread>

#include "common/error.hpp"
#include "common/gpu.hpp"
#include "common/log.hpp"
#include "common/net.hpp"
#include "jobs/api_server.hpp"
#include "jobs/commands.hpp"
#include "jobs/daemon_paths.hpp"
#include "jobs/job_daemon.hpp"
#include "platform/files.hpp"
#include "platform/host.hpp"
#include "platform/proc.hpp"
#include "platform/service.hpp"
#include "platform/signal_numbers.hpp"
#include "platform/stop_signals.hpp"

namespace ddp::cli {

namespace {

namespace fs = std::filesystem;

struct DaemonArgs {
  std::string state_dir;
  std::string socket;
  std::string listen;
  int slots = 0;
  int gpus = -1;
  double slurm_poll = 2;
  std::optional<std::size_t> max_tcp_connections;
  double tcp_auth_timeout = 10;
  bool service = false;
};

// The daemon's loop, made before run_daemon so that a stop from another thread (the Windows
// service manager's: --service, platform/service.hpp) can be posted to it. `stop` is serve()'s
// stop path, the one SIGINT/SIGTERM take; set before the loop runs, used on its thread only.
struct DaemonLoop {
  boost::asio::io_context io;
  std::function<void(const std::string& why)> stop;
};

// The bearer token for TCP clients: made once, kept 0600 in the state directory.
std::string load_or_create_token(const fs::path& file) {
  std::ifstream in(file);
  std::string token;
  if (in && std::getline(in, token) && token.size() >= 32) return token;
  std::random_device rd;
  token.clear();
  for (int i = 0; i < 8; ++i) token += fmt::format("{:08x}", rd());
  std::string why;
  if (!platform::write_private_file(file, token + "\n", why))
    throw Error(fmt::format("cannot write the API token {}: {}", file.string(), why));
  return token;
}

// One daemon per state directory: a second one would double-book every GPU.
void lock_state_dir(const fs::path& dir) {
  auto file = dir / "daemon.lock";
  std::string why;
  auto lock = platform::lock_for_process_lifetime(file, why);
  if (lock == platform::ProcessLock::Failed) throw Error(fmt::format("cannot lock {}: {}", file.string(), why));
  if (lock == platform::ProcessLock::Busy) {
    std::string pid;
    std::ifstream(file) >> pid;
    throw Error(
        fmt::format("another ddp-launch daemon (pid {}) uses the state directory {}; stop it first, or "
                    "give this one its own --state-dir",
                    pid.empty() ? "?" : pid, dir.string()));
  }
  if (!why.empty()) spdlog::warn("cannot record the daemon's pid in {}: {}", file.string(), why);
  // held (and locked) for the life of the process
}

// --state-dir (or the default), created 0700 and canonical.
fs::path prepare_state_dir(const std::string& flag) {
  fs::path state_dir = flag.empty() ? jobs::default_state_dir() : fs::path(flag);
  std::error_code ec;
  fs::create_directories(state_dir, ec);
  if (ec) throw UsageError(fmt::format("cannot create the state directory {}: {}", state_dir.string(), ec.message()));
  state_dir = fs::canonical(state_dir);
  fs::permissions(state_dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  return state_dir;
}

jobs::DaemonConfig daemon_config(const DaemonArgs& a, const fs::path& state_dir) {
  jobs::DaemonConfig config;
  config.state_dir = state_dir;
  config.self_exe = platform::executable_path().string();
  config.inventory.slots = a.slots > 0 ? a.slots : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int gpus = a.gpus;
  if (gpus < 0) {
    auto count = gpu::count_gpus();
    gpus = count.count.value_or(0);
    if (!count.count) spdlog::info("no GPUs to hand out: {}", count.why_not);
  }
  for (int g = 0; g < gpus; ++g) config.inventory.gpu_indices.push_back(g);
  config.slurm_poll_interval = std::chrono::milliseconds(static_cast<long>(a.slurm_poll * 1000));
  return config;
}

// --listen HOST:PORT: serves the API there too; returns " tcp=HOST:PORT" (the bound port) for
// the ready line.
std::string listen_tcp(jobs::ApiServer& server, const std::string& listen, const std::string& token,
                       std::optional<jobs::TcpAddress>& address) {
  auto parsed = net::parse_host_port(listen, {.min_port = 0});
  if (!parsed.value) throw UsageError(fmt::format("--listen '{}': {}; give HOST:PORT", listen, parsed.problem));
  auto bound = server.listen_tcp(parsed.value->host, *parsed.value->port, token);
  address = jobs::TcpAddress{parsed.value->host, bound};
  return fmt::format(" tcp={}:{}", listen.substr(0, listen.rfind(':')), bound);
}

// Runs the loop until SIGINT/SIGTERM (Windows: Ctrl-C, Ctrl-Break or platform::request_stop), or
// loop.stop (the service manager's stop).
void serve(DaemonLoop& loop, jobs::ApiServer& server) {
  auto& io = loop.io;
  loop.stop = [&](const std::string& why) {
    // Jobs keep running in their own sessions; the next daemon re-adopts them.
    spdlog::info("{}: stopping the API; running jobs go on and are re-adopted at the next start", why);
    server.stop();
    io.stop();
  };
  platform::StopSignals stop(io);
  stop.add(sig::kInt);
  stop.add(sig::kTerm);
  stop.async_wait([&](const boost::system::error_code& ec2, int signo) {
    if (!ec2) loop.stop(fmt::format("received signal {}", signo));
  });
  for (;;) {
    try {
      io.run();
      break;
    } catch (const std::exception& e) {  // one bad handler must not take the daemon (and the jobs' view) down
      spdlog::error("daemon: unexpected error in the event loop, continuing: {}", e.what());
    }
  }
}

void add_daemon_options(CLI::App* sub, DaemonArgs& a) {
  sub->add_option("--state-dir", a.state_dir,
                  "Database, job run directories and the API token (default: "
                  "$XDG_STATE_HOME/ddp-launch or ~/.local/state/ddp-launch)");
  sub->add_option("--socket", a.socket,
                  "Unix socket of the API, mode 0600 (default: $DDP_DAEMON_SOCKET, "
                  "$XDG_RUNTIME_DIR/ddp-launch/daemon.sock or <state-dir>/daemon.sock; the Windows build has "
                  "none: its API is on loopback TCP, 127.0.0.1 on a free port unless --listen says, with the token)");
  sub->add_option("--listen", a.listen,
                  "Also serve the API and the web dashboard on TCP HOST:PORT; every request needs the "
                  "token in <state-dir>/token (a bearer header, or the browser's login: `ddp-launch ui`)");
  sub->add_option("--slots", a.slots, "CPU slots (one per rank) jobs may use (default: the CPU count)")
      ->check(CLI::PositiveNumber);
  sub->add_option("--gpus", a.gpus,
                  "GPUs to hand out, 0..N-1 (default: what NVML reports; a number here "
                  "configures them, e.g. for tests)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--slurm-poll-interval", a.slurm_poll,
                  "Seconds between two `scontrol -o show job` of each running executor: slurm job")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  sub->add_option("--max-tcp-connections", a.max_tcp_connections,
                  "TCP clients (--listen) served at once; more are answered 503 and closed. The unix socket is "
                  "never capped (default: half the open-file limit, at most 1024)")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24));
  sub->add_option("--tcp-auth-timeout", a.tcp_auth_timeout,
                  "Seconds a TCP connection may take to send an authenticated request; then it is closed")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  sub->add_flag("--service", a.service,
                "Windows: run as the service ddp-launch under the service manager, which starts it and stops it "
                "(`sc stop ddp-launch`: as SIGTERM does); the installer's /SERVICE=1 registers it");
}

int run_daemon(const DaemonArgs& a, DaemonLoop& loop) {
  fs::path state_dir = prepare_state_dir(a.state_dir);
  // A service has no stderr (systemd's journal has no counterpart there): its log is a file.
  if (a.service) log_to_file(state_dir / "daemon.log");
  lock_state_dir(state_dir);
  auto token = load_or_create_token(state_dir / "token");

  auto config = daemon_config(a, state_dir);

  platform::ignore_broken_pipes();
  // One descriptor per client, per followed log, per job: the soft limit goes up to the hard one,
  // and TCP clients get a share of it that leaves the unix socket and the jobs theirs.
  auto open_files = proc::raise_open_file_limit();
  jobs::ApiLimits limits;
  limits.max_tcp_connections = jobs::tcp_connection_cap(open_files, a.max_tcp_connections);
  limits.tcp_auth_timeout = std::chrono::milliseconds(static_cast<long>(a.tcp_auth_timeout * 1000));
  auto& io = loop.io;
  jobs::JobDaemon daemon(io, config);
  auto& manager = daemon.jobs;
  jobs::ApiServer server(io, manager, limits);
  manager.recover();
  // Without a unix socket (the Windows build) the API is on loopback TCP at least, with the token.
  const bool on_unix = jobs::ApiServer::has_unix_socket() || !a.socket.empty();
  fs::path socket = a.socket.empty() ? jobs::default_socket_path(state_dir) : fs::path(a.socket);
  if (on_unix) server.listen_unix(socket);
  const std::string listen = a.listen.empty() && !on_unix ? "127.0.0.1:0" : a.listen;
  std::optional<jobs::TcpAddress> bound;
  std::string tcp = listen.empty() ? "" : listen_tcp(server, listen, token, bound);
  // Where clients given only --state-dir find it (a Windows client always).
  jobs::write_api_file(jobs::api_file(state_dir),
                       {platform::current_pid(), on_unix ? std::optional<fs::path>(socket) : std::nullopt, bound});
  spdlog::info("daemon ready: {} slots, {} GPUs, state in {}", config.inventory.slots,
               config.inventory.gpu_indices.size(), state_dir.string());
  // The token stays out of the log (it may go to a journal others read): `ui` prints the login URL.
  if (!tcp.empty()) spdlog::info("web dashboard on http://{}/ (`ddp-launch ui` prints its login URL)", tcp.substr(5));
  // One line on stdout for scripts and tests: where to reach it.
  std::cout << "listening" << (on_unix ? " unix=" + socket.string() : "") << tcp << std::endl;

  serve(loop, server);
  return 0;
}

}  // namespace

Command add_daemon_command(CLI::App& app) {
  auto* sub = app.add_subcommand("daemon",
                                 "Run the job daemon: queue YAML jobs, hand out slots and GPUs, run each "
                                 "under its own supervisor (HTTP API on a unix socket; with --listen, "
                                 "also on TCP with the web dashboard)");
  auto a = std::make_shared<DaemonArgs>();
  add_daemon_options(sub, *a);
  return {sub, [a]() -> int {
            DaemonLoop loop;
            if (!a->service) return run_daemon(*a, loop);
            try {
              return platform::run_as_service(
                  "ddp-launch", [&] { return run_daemon(*a, loop); },
                  [&] {
                    boost::asio::post(loop.io, [&] {
                      if (loop.stop) loop.stop("the service manager asked to stop");
                    });
                  });
            } catch (const platform::NotAService& e) {
              throw UsageError(e.what());
            }
          }};
}

}  // namespace ddp::cli
