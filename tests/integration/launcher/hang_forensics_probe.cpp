// Test driver for the hang forensics (launcher/hang/hang_forensics.hpp) with real ranks: hosts a store
// as the supervisor does, starts `--nproc` ranks of the worker command with the supervisor's
// worker environment (make_worker_launch: PYTHONFAULTHANDLER…), routes their output through the
// LogRouter (stderr to a file only with --redirect-stderr, as -r 2), waits until every rank printed
// "ready" and sleeps (its main thread in state S), collects their stacks, kills what is left and
// prints one JSON object: summary, stacks_file, per-rank source/missing/threads, how each rank died.
//
//   hang-forensics-probe --run-dir DIR [--nproc 2] [--redirect-stderr] [--bound-ms 10000] -- CMD...
//   hang-forensics-probe --serve-trigger: hosts a store, sets NCCL's flight-recorder trigger in it,
//       prints {"port": P}, serves until stdin closes (for a torch client to read the key).
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <csignal>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "launcher/hang/flight_recorder.hpp"
#include "launcher/hang/hang_forensics.hpp"
#include "launcher/outputs/log_router.hpp"
#include "launcher/supervisor/run_outputs.hpp"
#include "launcher/supervisor/spawner.hpp"
#include "launcher/supervisor/supervisor_config.hpp"
#include "launcher/workers/rank_plan.hpp"
#include "store/server.hpp"

extern char** environ;

using namespace ddp::launcher;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

struct Args {
  int nproc = 2;
  fs::path run_dir;
  bool redirect_stderr = false;
  int bound_ms = 10000;
  std::vector<std::string> argv;
};

int serve_trigger() {
  boost::asio::io_context io;
  ddp::store::StoreServer server(io, {});
  server.start();
  trigger_flight_recorder_dump(server, 1);
  std::cout << nlohmann::json{{"port", server.port()}}.dump() << std::endl;
  std::thread stdin_watch([&] {
    std::string line;
    while (std::getline(std::cin, line)) {
    }
    boost::asio::post(io, [&] { io.stop(); });
  });
  io.run();
  stdin_watch.join();
  return 0;
}

char process_state(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() ? '?' : text[close + 2];
}

// Until every rank said "ready" and its main thread sat in S for three polls in a row.
bool wait_until_hung(boost::asio::io_context& io, const std::vector<std::shared_ptr<StreamCapture>>& said,
                     const std::vector<StackTarget>& targets) {
  std::vector<int> asleep(targets.size(), 0);
  auto until = std::chrono::steady_clock::now() + 180s;
  while (std::chrono::steady_clock::now() < until) {
    io.run_for(50ms);
    bool all = true;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      const auto& lines = said[i]->lines;
      bool ready = std::find(lines.begin(), lines.end(), "ready") != lines.end();
      if (said[i]->ended) {
        std::cerr << "rank " << targets[i].rank << " ended before it hung\n";
        return false;
      }
      asleep[i] = ready && process_state(targets[i].pid) == 'S' ? asleep[i] + 1 : 0;
      all = all && asleep[i] >= 3;
    }
    if (all) return true;
  }
  std::cerr << "the ranks did not hang within 180 s\n";
  return false;
}

nlohmann::json result_json(const HangForensicsResult& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& s : r.ranks) {
    ranks.push_back({{"rank", s.rank},
                     {"source", std::string(stack_source_name(s.source))},
                     {"missing", s.missing},
                     {"threads", s.threads.size()}});
  }
  return {{"summary", r.summary},
          {"stacks_file", r.stacks_file.string()},
          {"write_error", r.write_error},
          {"took_ms", r.took.count()},
          {"ranks", ranks}};
}

struct Ranks {
  std::vector<std::unique_ptr<RankOutput>> outputs;
  std::vector<StackTarget> targets;
  std::vector<std::shared_ptr<StreamCapture>> said;
};

Ranks start_ranks(const Args& args, boost::asio::io_context& io, LogRouter& router, RunOutputs& outputs,
                  const SupervisorConfig& config, std::uint16_t port) {
  Ranks out;
  for (const auto& a : plan_ranks({1, 0, args.nproc, "default"})) {
    auto dir = outputs.rank_dir(0, a.local_rank);
    auto in = worker_env_input(config, a, "127.0.0.1", port, 0, (dir / "error.json").string(), "");
    auto child = spawn_rank(a.rank, make_worker_launch(in, args.argv), {}, {});
    auto o = std::make_unique<RankOutput>(io);
    o->rank = a.rank;
    o->prefix = "[rank " + std::to_string(a.rank) + "]: ";
    RankRouting routing{{.file = false, .console = true},
                        {.file = args.redirect_stderr, .console = !args.redirect_stderr}};
    router.start(*o, child.stdout_fd, child.stderr_fd, routing, dir);
    out.said.push_back(capture_stream(o->out, nullptr));
    out.targets.push_back({a.rank, a.local_rank, child.pid(), o.get()});
    out.outputs.push_back(std::move(o));
  }
  return out;
}

int probe(const Args& args) {
  boost::asio::io_context io;
  ddp::store::StoreServer server(io, {});
  server.start();
  SupervisorConfig config;
  config.run_dir = args.run_dir;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) config.base_env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  RunOutputsConfig outputs_config;
  outputs_config.run_dir = config.run_dir;
  RunOutputs outputs(outputs_config, nlohmann::json::object());
  outputs.begin_attempt(0);
  LogRouter router(io, outputs.console, outputs.files, outputs.metrics, outputs.filtered, [] {});
  auto ranks = start_ranks(args, io, router, outputs, config, server.port());
  bool hung = wait_until_hung(io, ranks.said, ranks.targets);
  for (auto& o : ranks.outputs) o->out.capture = nullptr;
  std::optional<HangForensicsResult> result;
  if (hung) {
    auto options = default_hang_forensics_options();
    options.bound = std::chrono::milliseconds(args.bound_ms);
    HangForensics forensics(io, options);
    forensics.collect(ranks.targets, args.run_dir / "stacks.txt",
                      [&](HangForensicsResult r) { result = std::move(r); });
    while (!result) io.run_for(20ms);
  }
  nlohmann::json deaths = nlohmann::json::array();
  for (const auto& t : ranks.targets) {
    ::kill(t.pid, SIGKILL);
    int status = 0;
    ::waitpid(t.pid, &status, 0);
    deaths.push_back({{"rank", t.rank}, {"signal", WIFSIGNALED(status) ? WTERMSIG(status) : 0}});
  }
  for (auto& o : ranks.outputs) o->stop_reading();
  io.run_for(100ms);
  outputs.flush();
  if (!result) return 1;
  auto out = result_json(*result);
  out["deaths"] = deaths;
  std::cout << out.dump() << std::endl;
  server.stop();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("hang forensics test probe");
  Args args;
  bool trigger = false;
  app.add_flag("--serve-trigger", trigger);
  app.add_option("--nproc", args.nproc);
  app.add_option("--run-dir", args.run_dir);
  app.add_flag("--redirect-stderr", args.redirect_stderr);
  app.add_option("--bound-ms", args.bound_ms);
  app.add_option("argv", args.argv);
  app.allow_extras(false);
  CLI11_PARSE(app, argc, argv);
  if (trigger) return serve_trigger();
  if (args.run_dir.empty() || args.argv.empty()) {
    std::cerr << "give --run-dir DIR and the worker command after --\n";
    return 2;
  }
  return probe(args);
}
