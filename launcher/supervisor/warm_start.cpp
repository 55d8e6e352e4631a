#include "launcher/supervisor/warm_start.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <utility>

#include "common/exit_status.hpp"
#include "common/signals.hpp"
#include "platform/fork_server.hpp"
#include "platform/host.hpp"
#include "platform/pipe.hpp"

namespace ddp::launcher {
namespace {

// A rank's request is answered in milliseconds; a reply this late means the process is stuck (a
// preload that hangs): cold from then on.
constexpr std::chrono::seconds kReplyTimeout{30};

// A string's bytes as hex: the environment and argv need not be UTF-8 (JSON strings must be).
std::string hex(const std::string& s) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size() * 2);
  for (unsigned char c : s) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 15]);
  }
  return out;
}

}  // namespace

bool warm_startable(const std::vector<std::string>& argv) {
  if (argv.size() < 3 || argv[1] != "-u") return false;
  if (argv[2] == "-m") return argv.size() >= 4 && !argv[3].empty();
  return !argv[2].empty() && argv[2][0] != '-';
}

WarmStart::WarmStart(WarmStartConfig config, platform::Containment& containment, platform::ChildExits& exits)
    : config_(std::move(config)),
      containment_(containment),
      exits_(exits),
      // A job that cannot restart (--max-restarts 0, static) never starts the process: no CPU for it.
      enabled_(config_.enabled && warm_startable(config_.worker_argv) && config_.can_restart) {}

WarmStart::~WarmStart() { platform::close_handle(std::exchange(channel_, platform::kNoHandle)); }

void WarmStart::start(const WorkerLaunch& first) {
  std::string error;
  auto channel = platform::make_fork_channel(error);
  if (!channel) return give_up(fmt::format("no channel to a warm-start process ({})", error));
  SpawnRequest req;
  req.program = first.argv[0];
  req.argv = {first.argv[0],
              "-u",
              "-c",
              kWarmStartPy,
              platform::channel_argument(channel->theirs),
              std::to_string(platform::current_pid()),
              (config_.run_dir / "warm_modules.txt").string()};
  for (const auto& [k, v] : first.env) req.env.push_back(k + "=" + v);
  auto started = spawn_process(req);
  platform::close_handle(channel->theirs);
  channel_ = channel->ours;
  if (!started.ok()) return give_up(fmt::format("cannot start it ({}: {})", started.what, started.error));
  child_ = std::move(started.child);
  exits_.watch(child_, kTag);
  containment_.watch(child_.pid());
}

void WarmStart::after_spawn(const WorkerLaunch& first, pid_t first_pid) {
  if (!enabled_) return;
  if (!running()) start(first);
  if (!running()) return;
  std::string error;
  if (!platform::send_message(channel_, nlohmann::json{{"op", "learn"}, {"pid", first_pid}}.dump(), {}, error))
    give_up(fmt::format("cannot reach it ({})", error));
}

bool WarmStart::take_ready(std::chrono::milliseconds timeout) {
  std::string error;
  auto msg = platform::receive_message(channel_, timeout, error);
  if (!msg) {
    if (!error.empty()) give_up(fmt::format("cannot hear from it ({})", error));
    return false;
  }
  auto j = nlohmann::json::parse(*msg, nullptr, false);
  if (j.is_object() && j.value("ready", false)) return ready_ = true;
  give_up(fmt::format("it said {} before being ready", *msg));
  return false;
}

bool WarmStart::settled() {
  if (!enabled_ || !running() || ready_) return true;
  return take_ready(std::chrono::milliseconds(0)) || !enabled_;
}

void WarmStart::stop_waiting(std::chrono::milliseconds waited) {
  if (!settled()) give_up(fmt::format("it had not imported torch after {} ms", waited.count()));
}

std::optional<RankProcess> WarmStart::spawn(int rank, const WorkerLaunch& launch,
                                            const std::vector<platform::NativeHandle>& cgroup_procs,
                                            const std::vector<int>& cpu_affinity) {
  if (!enabled_ || !running() || !ready_) return std::nullopt;
  std::string error;
  auto pipes = platform::make_output_pipes(error);
  if (!pipes) return std::nullopt;  // spawn_rank says so
  auto argv = nlohmann::json::array();
  for (const auto& a : launch.argv) argv.push_back(hex(a));
  auto env = nlohmann::json::array();
  for (const auto& [k, v] : launch.env) env.push_back({hex(k), hex(v)});
  nlohmann::json req{{"op", "spawn"}, {"argv", argv}, {"env", env}, {"cpus", cpu_affinity}};
  std::vector<platform::NativeHandle> fds{pipes->out.write, pipes->err.write};
  fds.insert(fds.end(), cgroup_procs.begin(), cgroup_procs.end());
  std::optional<std::string> reply;
  platform::adopt_orphans(true);  // the rank's parent exits at once: it becomes ours
  if (platform::send_message(channel_, req.dump(), fds, error))
    reply = platform::receive_message(channel_, kReplyTimeout, error);
  platform::adopt_orphans(false);
  platform::close_handle(pipes->out.write);
  platform::close_handle(pipes->err.write);
  auto j = reply ? nlohmann::json::parse(*reply, nullptr, false) : nlohmann::json();
  if (!j.is_object() || !j.contains("pid") || !j["pid"].is_number_integer()) {
    platform::close_handle(pipes->out.read);
    platform::close_handle(pipes->err.read);
    give_up(reply ? fmt::format("it could not fork rank {} ({})", rank, *reply)
                  : fmt::format("no answer for rank {} ({})", rank,
                                error.empty() ? fmt::format("none in {} s", kReplyTimeout.count()) : error));
    return std::nullopt;
  }
  return RankProcess{Child(j["pid"].get<pid_t>(), nullptr), pipes->out.read, pipes->err.read};
}

void WarmStart::exited(const platform::ChildExit& x) {
  containment_.forget(x.pid);
  child_ = Child();
  platform::close_handle(std::exchange(channel_, platform::kNoHandle));
  if (!stopping_)
    give_up(fmt::format("the warm-start process (pid {}) ended: {}", x.pid,
                        describe_exit(ExitStatus::of(x.exit_code, x.signal))));
}

void WarmStart::give_up(const std::string& why) {
  if (running()) child_.signal_group(sig::kKill);  // its exit arrives through exits()
  if (!enabled_) return;
  enabled_ = false;
  spdlog::warn("warm start off: {}; ranks start cold from now on", why);
}

void WarmStart::stop() {
  stopping_ = true;
  platform::close_handle(std::exchange(channel_, platform::kNoHandle));
  if (running()) child_.signal_group(sig::kKill);
}

}  // namespace ddp::launcher
