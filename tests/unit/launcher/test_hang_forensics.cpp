// HangForensics on a real loop with real processes: Python ranks dump their threads through
// faulthandler on SIGABRT (read from their routed stderr, redirected to a file as with -r), native
// ranks are read by gdb without being killed, and `done` always comes within the bound, naming
// the ranks that gave no stack and why.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <boost/asio/io_context.hpp>
#include <csignal>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "launcher/hang/hang_forensics.hpp"
#include "launcher/outputs/log_router.hpp"
#include "launcher/supervisor/run_outputs.hpp"
#include "launcher/supervisor/spawner.hpp"
#include "platform/proc.hpp"
#include "tests/unit/temp_dir.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr const char* kPython = "/usr/bin/python3";

struct Rig {
  ddp::test::TempDir dir{"hang_forensics_test"};
  RunOutputsConfig config;
  std::unique_ptr<RunOutputs> outputs;
  boost::asio::io_context io;
  std::unique_ptr<LogRouter> router;
  std::vector<std::unique_ptr<RankOutput>> ranks;
  std::vector<pid_t> pids;

  Rig() {
    config.run_dir = dir.path;
    outputs = std::make_unique<RunOutputs>(config, nlohmann::json::object());
    router =
        std::make_unique<LogRouter>(io, outputs->console, outputs->files, outputs->metrics, outputs->filtered, [] {});
  }
  ~Rig() {
    for (pid_t p : pids) ::kill(p, SIGKILL);
    for (pid_t p : pids) ::waitpid(p, nullptr, 0);
    for (auto& r : ranks) r->stop_reading();
    io.poll();
  }

  // Starts `argv` as rank `rank` (stdout and stderr redirected to files, as with -r 3) and waits
  // until it printed `ready` on stdout.
  StackTarget start(int rank, std::vector<std::string> argv, const std::string& ready = "ready") {
    WorkerLaunch launch{{{"PYTHONFAULTHANDLER", "1"}, {"PATH", "/usr/bin:/bin"}}, std::move(argv)};
    auto child = spawn_rank(rank, launch, {}, {});
    pids.push_back(child.pid());
    auto out = std::make_unique<RankOutput>(io);
    out->rank = rank;
    RankRouting routing{{.file = true, .console = false}, {.file = true, .console = false}};
    router->start(*out, child.stdout_fd, child.stderr_fd, routing, dir.path / std::to_string(rank));
    auto said = capture_stream(out->out, nullptr);
    auto until = std::chrono::steady_clock::now() + 30s;
    while (std::find(said->lines.begin(), said->lines.end(), ready) == said->lines.end()) {
      REQUIRE_MESSAGE(std::chrono::steady_clock::now() < until, "rank ", rank, " never said ", ready);
      REQUIRE_MESSAGE(!said->ended, "rank ", rank, " ended before it said ", ready);
      io.run_for(20ms);
    }
    out->out.capture = nullptr;
    ranks.push_back(std::move(out));
    return StackTarget{rank, rank, child.pid(), ranks.back().get()};
  }

  fs::path script(const std::string& name, const std::string& text) {
    auto p = dir.path / name;
    std::ofstream(p) << text;
    return p;
  }

  HangForensicsResult collect(HangForensics& f, std::vector<StackTarget> targets) {
    std::optional<HangForensicsResult> result;
    f.collect(std::move(targets), dir.path / "stacks.txt", [&](HangForensicsResult r) { result = std::move(r); });
    auto until = std::chrono::steady_clock::now() + 60s;
    while (!result && std::chrono::steady_clock::now() < until) io.run_for(20ms);
    REQUIRE(result);
    return std::move(*result);
  }

  int exit_signal(pid_t pid) {
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    std::erase(pids, pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

HangForensicsOptions options(std::optional<fs::path> gdb, std::chrono::milliseconds bound = 10s) {
  HangForensicsOptions o;
  o.gdb = std::move(gdb);
  o.bound = bound;
  return o;
}

}  // namespace

TEST_CASE("Python ranks: faulthandler's tracebacks from their redirected stderr, the odd rank's line quoted") {
  Rig rig;
  auto sleeper = rig.script("sleeper.py",
                            "import time\n"
                            "def load_batch():\n"
                            "    print('ready', flush=True)\n"
                            "    time.sleep(600)\n"
                            "load_batch()\n");
  auto waiter = rig.script("waiter.py",
                           "import threading\n"
                           "def all_reduce():\n"
                           "    print('ready', flush=True)\n"
                           "    threading.Event().wait()\n"
                           "threading.Thread(target=all_reduce, daemon=True).start()\n"
                           "all_reduce()\n");
  auto t0 = rig.start(0, {kPython, waiter.string()});
  auto t1 = rig.start(1, {kPython, sleeper.string()});
  HangForensics forensics(rig.io, options(std::nullopt));
  auto r = rig.collect(forensics, {t0, t1});
  CHECK(r.summary ==
        "rank 0 is in waiter.py:4 all_reduce: threading.Event().wait(); "
        "rank 1 is in sleeper.py:4 load_batch: time.sleep(600)");
  REQUIRE(r.ranks.size() == 2);
  CHECK(r.ranks[0].source == StackSource::Faulthandler);
  CHECK(r.ranks[0].threads.size() == 2);  // both threads of rank 0
  CHECK(r.stacks_file == rig.dir.path / "stacks.txt");
  auto file = read_file(r.stacks_file);
  CHECK(file.find(r.summary) != std::string::npos);
  CHECK(file.find("sleeper.py\", line 4 in load_batch") != std::string::npos);
  CHECK(rig.exit_signal(t0.pid) == SIGABRT);
  CHECK(rig.exit_signal(t1.pid) == SIGABRT);
  // The redirected stderr still has the dump in its file (the router reads the pipe either way).
  rig.outputs->flush();
  CHECK(read_file(rig.dir.path / "1" / "stderr.log").find("most recent call first") != std::string::npos);
}

TEST_CASE("a native rank is read by gdb and left running; without gdb or SDK handler it dies saying why") {
  Rig rig;
  auto gdb = default_hang_forensics_options().gdb;
  if (!gdb) {
    MESSAGE("gdb is not installed: the gdb half of this test is skipped (packaging/install-deps.sh installs it)");
  } else {
    auto t = rig.start(0, {"/bin/sh", "-c", "echo ready; exec sleep 600"});
    HangForensics forensics(rig.io, options(gdb));
    auto r = rig.collect(forensics, {t});
    REQUIRE(r.ranks.size() == 1);
    CHECK_MESSAGE(r.ranks[0].missing.empty(), r.ranks[0].missing);
    CHECK(r.ranks[0].source == StackSource::Gdb);
    CHECK(!r.ranks[0].threads.empty());
    CHECK(r.summary.starts_with("rank 0 is in "));
    CHECK(::kill(t.pid, 0) == 0);  // gdb detached: the rank lives on for the supervisor to kill
  }
  auto t = rig.start(1, {"/bin/sh", "-c", "echo ready; exec sleep 600"});
  HangForensics forensics(rig.io, options(std::nullopt));
  auto r = rig.collect(forensics, {t});
  CHECK(r.ranks.at(0).missing.find("no gdb on PATH") != std::string::npos);
  CHECK(r.ranks.at(0).missing.find("worker SDK") != std::string::npos);
  CHECK(r.summary.starts_with("rank 1 gave no stack (no gdb on PATH"));
  CHECK(rig.exit_signal(t.pid) == SIGABRT);
}

TEST_CASE("a rank that ignores SIGABRT: done comes at the bound, naming it; a gone rank is named too") {
  Rig rig;
  auto stubborn = rig.script("stubborn.py",
                             "import signal, time\n"
                             "signal.signal(signal.SIGABRT, signal.SIG_IGN)\n"
                             "print('ready', flush=True)\n"
                             "time.sleep(600)\n");
  auto t0 = rig.start(0, {kPython, stubborn.string()});
  auto t1 = rig.start(1, {"/bin/sh", "-c", "echo ready"});
  REQUIRE(rig.exit_signal(t1.pid) == 0);
  HangForensics forensics(rig.io, options(std::nullopt, 1500ms));
  auto start = std::chrono::steady_clock::now();
  auto r = rig.collect(forensics, {t0, t1});
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 1500ms);
  CHECK(took < 5s);
  CHECK(r.ranks.at(0).missing.find("within 1500 ms of SIGABRT") != std::string::npos);
  CHECK(!r.ranks.at(1).missing.empty());
  CHECK(r.summary.find("rank 0 gave no stack") != std::string::npos);
  CHECK(r.summary.find("rank 1 gave no stack") != std::string::npos);
  CHECK(::kill(t0.pid, 0) == 0);
}

TEST_CASE("a SIGSTOPped rank is named as stopped at once, not waited for as a missing traceback") {
  // Regression: SIGABRT waits while a process is stopped, so the collection waited out its bound
  // and said "no faulthandler traceback within 10000 ms" of a rank that was simply stopped.
  Rig rig;
  auto sleeper = rig.script("sleeper.py", "import time\nprint('ready', flush=True)\ntime.sleep(600)\n");
  auto t0 = rig.start(0, {kPython, sleeper.string()});
  auto t1 = rig.start(1, {kPython, sleeper.string()});
  REQUIRE(::kill(t1.pid, SIGSTOP) == 0);
  auto until = std::chrono::steady_clock::now() + 10s;
  while (!ddp::proc::stopped(t1.pid) && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(10ms);
  auto st = ddp::proc::stopped(t1.pid);
  REQUIRE(st);
  CHECK_FALSE(st->traced);
  CHECK_FALSE(ddp::proc::stopped(t0.pid));
  HangForensics forensics(rig.io, options(std::nullopt, 8s));
  auto start = std::chrono::steady_clock::now();
  auto r = rig.collect(forensics, {t0, t1});
  CHECK(std::chrono::steady_clock::now() - start < 6s);  // not the bound
  CHECK(r.ranks.at(0).missing.empty());
  CHECK(r.ranks.at(1).missing ==
        "it is stopped (SIGSTOP or another stop signal; who sent it is not recorded): a stopped process cannot "
        "write its stacks or make progress until `kill -CONT " +
            std::to_string(t1.pid) + "`");
  CHECK(r.summary.find("rank 1 gave no stack (it is stopped") != std::string::npos);
  CHECK(rig.exit_signal(t0.pid) == SIGABRT);
  CHECK(::kill(t1.pid, 0) == 0);  // not signalled: still there, stopped
  ::kill(t1.pid, SIGCONT);
  // A tracer's stop names the tracer.
  ddp::proc::StoppedProcess traced{true, 812, "gdb -p 4242"};
  CHECK(stopped_rank_text(4242, traced) ==
        "it is held by a tracer, pid 812 (gdb -p 4242): a traced process runs only when its tracer lets it");
}

TEST_CASE("one collection at a time; a stacks file that cannot be written is reported, not thrown") {
  Rig rig;
  auto t = rig.start(0, {"/bin/sh", "-c", "echo ready; exec sleep 600"});
  HangForensics forensics(rig.io, options(std::nullopt, 2s));
  std::optional<HangForensicsResult> first, second;
  forensics.collect({t}, "/proc/no/such/dir/stacks.txt", [&](HangForensicsResult r) { first = std::move(r); });
  CHECK(forensics.busy());
  forensics.collect({t}, rig.dir.path / "b.txt", [&](HangForensicsResult r) { second = std::move(r); });
  auto until = std::chrono::steady_clock::now() + 30s;
  while ((!first || !second) && std::chrono::steady_clock::now() < until) rig.io.run_for(20ms);
  REQUIRE(first);
  REQUIRE(second);
  CHECK(second->ranks.at(0).missing == "another collection is under way");
  CHECK(first->stacks_file.empty());
  CHECK(first->write_error.find("/proc/no/such/dir/stacks.txt") != std::string::npos);
  CHECK(!forensics.busy());
}
