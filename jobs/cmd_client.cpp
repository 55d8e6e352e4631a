// The daemon's CLI clients: `ddp-launch submit FILE`, `list`, `status ID`, `logs ID [-f]
// [--rank N]`, `cancel ID`, `ui [--open]`. They talk HTTP to the daemon's unix socket.
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.hpp"
#include "jobs/api_client.hpp"
#include "jobs/api_server.hpp"
#include "jobs/commands.hpp"
#include "jobs/daemon_paths.hpp"
#include "jobs/dashboard/session.hpp"
#include "platform/programs.hpp"
#include "platform/subprocess.hpp"

namespace ddp::cli {

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// How a client command names its daemon: --socket, or --state-dir (its api.json), or neither (the
// default socket; in a build without unix sockets, the default state directory's api.json).
struct DaemonFlags {
  std::string socket;
  std::string state_dir;
};

// The daemon's address as it wrote it to <state-dir>/api.json (daemon_paths.hpp), with the token for TCP.
jobs::ApiAddress address_in(const fs::path& state_dir) {
  const auto file = jobs::api_file(state_dir);
  auto published = jobs::read_api_file(file);
  if (!published) {
    throw Error(
        fmt::format("no ddp-launch daemon has run with the state directory {} (no {}). Start one with "
                    "`ddp-launch daemon --state-dir {}`, or name another with --state-dir",
                    state_dir.string(), file.string(), state_dir.string()));
  }
  jobs::ApiAddress address;
  if (published->socket && jobs::ApiServer::has_unix_socket()) {
    address.socket = *published->socket;
    return address;
  }
  if (!published->tcp) {
    throw Error(
        fmt::format("the daemon of {} (pid {}) serves its API on the unix socket {} alone, which this "
                    "build cannot reach: restart it with --listen 127.0.0.1:PORT",
                    state_dir.string(), published->pid, published->socket.value_or(fs::path()).string()));
  }
  address.host = published->tcp->host;
  address.port = published->tcp->port;
  address.token = jobs::read_token(state_dir);
  return address;
}

jobs::ApiAddress address_of(const DaemonFlags& flags) {
  if (!flags.socket.empty()) return jobs::ApiAddress{flags.socket, {}, 0, {}};
  if (!flags.state_dir.empty()) return address_in(flags.state_dir);
  if (!jobs::ApiServer::has_unix_socket()) return address_in(jobs::default_state_dir());
  return jobs::ApiAddress{jobs::default_socket_path(jobs::default_state_dir()), {}, 0, {}};
}

// A NUL in a message (quoting the user's bytes) as \0: an exception's what() would end there.
std::string printable(std::string text) {
  for (auto at = text.find('\0'); at != std::string::npos; at = text.find('\0', at + 2)) text.replace(at, 1, "\\0");
  return text;
}

// The reply's JSON, or an Error carrying the daemon's message for a 4xx/5xx.
json checked(const jobs::ApiReply& r) {
  json body;
  try {
    body = json::parse(r.body);
  } catch (const std::exception&) {
    throw Error(
        fmt::format("the daemon answered {} with a body that is not JSON: {}", r.status, r.body.substr(0, 200)));
  }
  if (r.status >= 400) throw Error(printable(body.value("error", fmt::format("HTTP {}", r.status))));
  return body;
}

std::string text_or_dash(const json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string join_gpus(const json& gpus) {
  std::string out;
  for (const auto& g : gpus) out += (out.empty() ? "" : ",") + std::to_string(g.get<int>());
  return out.empty() ? "-" : out;
}

void add_socket_option(CLI::App* sub, DaemonFlags& flags) {
  auto* socket = sub->add_option("--socket", flags.socket,
                                 "The daemon's unix socket (default: $DDP_DAEMON_SOCKET, "
                                 "$XDG_RUNTIME_DIR/ddp-launch/daemon.sock or ~/.local/state/ddp-launch/daemon.sock)");
  sub->add_option("--state-dir", flags.state_dir,
                  "The daemon's state directory: reach it where its api.json says, over TCP with the token "
                  "kept there when it has no unix socket (the Windows build's default: %LOCALAPPDATA%\\ddp-launch)")
      ->excludes(socket);
}

Command add_submit_command(CLI::App& app) {
  auto* sub = app.add_subcommand("submit", "Submit a YAML job file to the daemon; prints the job id");
  auto file = std::make_shared<std::string>();
  auto socket = std::make_shared<DaemonFlags>();
  auto as_json = std::make_shared<bool>(false);
  sub->add_option("FILE", *file, "The job file (schema: jobs/README.md)")->required();
  sub->add_flag("--json", *as_json, "Print the daemon's JSON reply");
  add_socket_option(sub, *socket);
  return {sub, [=]() -> int {
            std::ifstream in(*file, std::ios::binary);
            if (!in) throw UsageError(fmt::format("cannot read the job file {}", *file));
            // The daemon's limit, said here: sending 50 MB only to have the daemon hang up gave
            // "Broken pipe". Read one byte past it (a FIFO or /dev/zero has no size to ask first).
            std::string text(jobs::kMaxRequestBody + 1, '\0');
            in.read(text.data(), static_cast<std::streamsize>(text.size()));
            text.resize(static_cast<std::size_t>(in.gcount()));
            if (text.size() > jobs::kMaxRequestBody) {
              throw UsageError(
                  fmt::format("{} is over {} bytes (1 MiB), the most the daemon takes for a job file (a "
                              "job file is a few KiB): is it the right file?",
                              *file, jobs::kMaxRequestBody));
            }
            jobs::ApiClient client(address_of(*socket));
            auto r = client.request("POST", "/v1/jobs", std::move(text), {{"X-Ddp-File", *file}});
            auto body = checked(r);
            if (*as_json) {
              std::cout << body.dump(2) << "\n";
            } else {
              std::cout << body["id"].get<long long>() << "\n";
              std::cerr << fmt::format("submitted job {} ({}): {}\n", body["id"].get<long long>(),
                                       body["name"].get<std::string>(), body["state"].get<std::string>());
            }
            return 0;
          }};
}

Command add_list_command(CLI::App& app) {
  auto* sub = app.add_subcommand("list", "List the daemon's jobs, newest first");
  auto socket = std::make_shared<DaemonFlags>();
  auto state = std::make_shared<std::string>();
  auto limit = std::make_shared<int>(100);
  auto as_json = std::make_shared<bool>(false);
  sub->add_option("--state", *state, "Only jobs in this state (PENDING, RUNNING, FAILED, …)");
  sub->add_option("--limit", *limit, "At most this many")->check(CLI::Range(1, 100000))->capture_default_str();
  sub->add_flag("--json", *as_json, "Print the daemon's JSON reply");
  add_socket_option(sub, *socket);
  return {sub, [=]() -> int {
            jobs::ApiClient client(address_of(*socket));
            auto target = fmt::format("/v1/jobs?limit={}", *limit);
            if (!state->empty()) target += "&state=" + *state;
            auto body = checked(client.request("GET", target));
            if (*as_json) {
              std::cout << body.dump(2) << "\n";
              return 0;
            }
            std::cout << fmt::format("{:>5}  {:<20} {:<11} {:>4} {:>8} {:>6}  {}\n", "ID", "NAME", "STATE", "RUNS",
                                     "PRIORITY", "GPUS", "REASON");
            for (const auto& j : body["jobs"]) {
              auto reason = j.contains("pending_reason") ? j["pending_reason"] : j["reason"];
              std::cout << fmt::format("{:>5}  {:<20} {:<11} {:>4} {:>8} {:>6}  {}\n", j["id"].get<long long>(),
                                       j["name"].get<std::string>(), j["state"].get<std::string>(),
                                       j["runs"].get<int>(), j["priority"].get<int>(), join_gpus(j["gpus"]),
                                       text_or_dash(reason));
            }
            return 0;
          }};
}

// The latest run's restart budget after its latest worker-group restart; nothing before one.
void print_restart_budget(const json& job) {
  if (!job.contains("restart_budget")) return;
  const auto& b = job["restart_budget"];
  const bool progress = b.value("counts", std::string("count")) == "progress";
  std::cout << fmt::format("  restarts:  {} of {}, {} left (this run{}; {} in a row without progress)\n",
                           b["used"].get<int>(), b["max_restarts"].get<int>(), b["restarts_left"].get<int>(),
                           progress ? ", restart_budget: progress counts only those without progress" : "",
                           b["no_progress_restarts"].get<int>());
}

// One line per straggling rank of the latest run (its latest verdict); nothing when none.
void print_stragglers(const json& job) {
  for (const auto& s : job.value("stragglers", json::array())) {
    std::cout << fmt::format(
        "  straggler: rank {} at {:.2f}× the median step rate ({:.2f} s/step vs {:.2f} s/step), "
        "attempt {}\n",
        s["rank"].get<int>(), s["ratio"].get<double>(), s["rank_step_s"].get<double>(),
        s["median_step_s"].get<double>(), s["attempt"].get<int>());
  }
}

Command add_status_command(CLI::App& app) {
  auto* sub = app.add_subcommand("status", "Show one job of the daemon");
  auto socket = std::make_shared<DaemonFlags>();
  auto id = std::make_shared<long long>(0);
  auto as_json = std::make_shared<bool>(false);
  sub->add_option("ID", *id, "Job id")->required()->check(CLI::PositiveNumber);
  sub->add_flag("--json", *as_json, "Print the daemon's JSON reply");
  add_socket_option(sub, *socket);
  return {sub, [=]() -> int {
            jobs::ApiClient client(address_of(*socket));
            auto j = checked(client.request("GET", fmt::format("/v1/jobs/{}", *id)));
            if (*as_json) {
              std::cout << j.dump(2) << "\n";
              return 0;
            }
            std::cout << fmt::format("job {} ({}): {}\n", j["id"].get<long long>(), j["name"].get<std::string>(),
                                     j["state"].get<std::string>());
            std::cout << fmt::format("  reason:    {}\n",
                                     text_or_dash(j.contains("pending_reason") ? j["pending_reason"] : j["reason"]));
            std::cout << fmt::format("  runs:      {} (restarts {})\n", j["runs"].get<int>(), j["restarts"].get<int>());
            print_restart_budget(j);
            print_stragglers(j);
            if (j.value("executor", std::string("local")) == "slurm") {
              std::cout << fmt::format("  resources: {} node(s) x {} rank(s), on Slurm\n", j.value("nodes", 1),
                                       j["nproc_per_node"].get<int>());
            } else {
              std::cout << fmt::format("  resources: {} rank(s), GPUs {}\n", j["nproc_per_node"].get<int>(),
                                       join_gpus(j["gpus"]));
            }
            std::cout << fmt::format("  exit code: {}\n", text_or_dash(j["exit_code"]));
            if (j["pid"].get<int>() > 0) std::cout << fmt::format("  supervisor pid: {}\n", j["pid"].get<int>());
            if (j.contains("slurm_job_id")) {
              std::cout << fmt::format("  slurm job: {} (scontrol -o show job {})\n",
                                       j["slurm_job_id"].get<std::string>(), j["slurm_job_id"].get<std::string>());
            }
            std::cout << fmt::format("  run dir:   {}\n", text_or_dash(j["run_dir"]));
            if (j.contains("hangs") && !j["hangs"].empty()) {
              const auto& last = j["hangs"].back();
              std::cout << fmt::format("  hangs:     {} (last: run {} attempt {}: {})\n", j["hangs"].size(),
                                       last["run"].get<int>(), last["attempt"].get<int>(),
                                       last["text"].get<std::string>());
            }
            return 0;
          }};
}

Command add_logs_command(CLI::App& app) {
  auto* sub = app.add_subcommand("logs", "Print a job's log (one rank's stdout by default); -f follows it");
  auto socket = std::make_shared<DaemonFlags>();
  auto id = std::make_shared<long long>(0);
  auto follow = std::make_shared<bool>(false);
  auto rank = std::make_shared<std::string>("0");
  auto err = std::make_shared<bool>(false);
  sub->add_option("ID", *id, "Job id")->required()->check(CLI::PositiveNumber);
  sub->add_flag("-f,--follow", *follow, "Keep printing until the job ends");
  sub->add_option("--rank", *rank, "Rank whose output to show, or 'supervisor'")->capture_default_str();
  sub->add_flag("--stderr", *err, "The rank's stderr instead of its stdout");
  add_socket_option(sub, *socket);
  return {sub, [=]() -> int {
            jobs::ApiClient client(address_of(*socket));
            auto target = fmt::format("/v1/jobs/{}/logs?rank={}&stream={}{}", *id, *rank, *err ? "stderr" : "stdout",
                                      *follow ? "&follow=1" : "");
            auto reply = client.stream(target, [&](std::string_view data) {
              std::cout.write(data.data(), static_cast<std::streamsize>(data.size()));
              std::cout.flush();
            });
            if (reply.status >= 400) checked(reply);
            return 0;
          }};
}

Command add_cancel_command(CLI::App& app) {
  auto* sub = app.add_subcommand("cancel", "Cancel a job: queued ones are dropped, running ones stopped");
  auto socket = std::make_shared<DaemonFlags>();
  auto id = std::make_shared<long long>(0);
  sub->add_option("ID", *id, "Job id")->required()->check(CLI::PositiveNumber);
  add_socket_option(sub, *socket);
  return {sub, [=]() -> int {
            jobs::ApiClient client(address_of(*socket));
            auto j = checked(client.request("POST", fmt::format("/v1/jobs/{}/cancel", *id)));
            std::cout << fmt::format("job {}: {}\n", j["id"].get<long long>(), j["state"].get<std::string>());
            return 0;
          }};
}

// The dashboard's one-time login URL (`ddp-launch ui`), for the daemon the socket leads to (mode
// 0600: its owner): its TCP address from GET /v1/daemon, a login code from POST /v1/dashboard/login-link.
Command add_ui_command(CLI::App& app) {
  auto* sub = app.add_subcommand("ui", "Print the web dashboard's login URL of the running daemon (--listen)");
  auto socket = std::make_shared<DaemonFlags>();
  auto open = std::make_shared<bool>(false);
  sub->add_flag("--open", *open, "Also open it in the desktop's browser (xdg-open; Windows: the URL handler)");
  add_socket_option(sub, *socket);
  return {sub, [=]() -> int {
            jobs::ApiClient client(address_of(*socket));
            auto daemon = checked(client.request("GET", "/v1/daemon"));
            if (!daemon["tcp"].is_object()) {
              throw Error(fmt::format(
                  "the daemon (pid {}) serves no TCP address, so no dashboard: restart it with `ddp-launch daemon "
                  "--listen 127.0.0.1:8470` (any HOST:PORT)",
                  daemon["pid"].get<long long>()));
            }
            // A one-time code, not the token: the browser keeps the URL it opens in its history,
            // and xdg-open's browser shows it on its command line to every user of the host.
            auto link = checked(client.request("POST", "/v1/dashboard/login-link"));
            auto url = jobs::dashboard::dashboard_url(daemon["tcp"]["host"].get<std::string>(),
                                                      daemon["tcp"]["port"].get<std::uint16_t>(),
                                                      link["code"].get<std::string>());
            std::cout << url << std::endl;
            std::cerr << fmt::format("(a one-time login link, valid {} min: run `ddp-launch ui` again for another)\n",
                                     link["expires_in_s"].get<long long>() / 60);
            if (!*open) return 0;
            auto opener = platform::open_url_command(url);
            auto r = run_command(opener, std::chrono::seconds(15));
            if (!r.ok()) {
              throw Error(fmt::format("{} could not open the URL ({}); open the URL above in a browser", opener.front(),
                                      r.started ? r.output.substr(0, 300) : r.start_error));
            }
            return 0;
          }};
}

}  // namespace

std::vector<Command> add_job_client_commands(CLI::App& app) {
  return {add_submit_command(app), add_list_command(app),   add_status_command(app),
          add_logs_command(app),   add_cancel_command(app), add_ui_command(app)};
}

}  // namespace ddp::cli
