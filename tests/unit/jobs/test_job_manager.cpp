// JobManager's lifecycle with fake shells: an executor that starts nothing (the test says when a run
// started, runs, ends), a clock the test sets, and a real JobDb on a temporary SQLite file and a
// real file watch (the run-event reader reads what the test writes into a run's events.jsonl).
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/events.hpp"
#include "jobs/executor.hpp"
#include "jobs/job_clock.hpp"
#include "jobs/job_db.hpp"
#include "jobs/job_manager.hpp"
#include "platform/file_watch.hpp"
#include "tests/unit/temp_dir.hpp"

using namespace ddp::jobs;
namespace fs = std::filesystem;
namespace ev = ddp::events;
using nlohmann::json;

namespace {

struct FakeClock : Clock {
  double t = 1'000'000.0;
  double now() const override { return t; }
};

// Starts nothing: each start waits in `starts` for the test to answer it; each followed run's
// updates are the test's to send (update()).
struct FakeExecutor : Executor {
  explicit FakeExecutor(bool host) : host_resources(host) {}
  struct Start {
    JobId id;
    fs::path run_dir;
    RunStarted started;
    RunStartFailed failed;
  };
  struct Follow {
    JobId id;
    RunHandle run;
    bool own_child;
  };
  bool host_resources;
  std::vector<Start> starts;
  std::vector<Follow> follows;
  std::map<JobId, RunUpdated> followed;
  std::set<pid_t> alive;  // what can_readopt finds
  std::vector<std::pair<JobId, bool>> stops;
  std::optional<RunHandle> unrecorded;

  const char* name() const override { return "fake"; }
  bool uses_host_resources() const override { return host_resources; }
  void start(const RunRequest& r, RunStarted started, RunStartFailed failed) override {
    starts.push_back({r.id, r.run_dir, std::move(started), std::move(failed)});
  }
  void follow(JobId id, const RunHandle& run, bool own_child, RunUpdated updated) override {
    follows.push_back({id, run, own_child});
    followed[id] = std::move(updated);
  }
  bool can_readopt(const RunHandle& run) override { return alive.count(run.pid) > 0; }
  std::optional<RunHandle> find_unrecorded(const fs::path&) const override { return unrecorded; }
  void stop(JobId id, const RunHandle&, bool force) override { stops.emplace_back(id, force); }
  void forget(JobId id) override { followed.erase(id); }
  std::optional<fs::path> log_path(const fs::path&, const RunHandle&, const std::string&,
                                   const std::string&) const override {
    return std::nullopt;
  }

  void update(JobId id, RunUpdate u) {
    REQUIRE(followed.count(id));
    auto cb = followed[id];
    cb(u);
  }
  void end(JobId id, std::optional<ddp::ExitStatus> exit) {
    RunUpdate u;
    u.phase = RunUpdate::Phase::Ended;
    u.supervisor_exit = exit;
    update(id, u);
  }
};

// One daemon's life over a state directory: a fresh manager on the same database is a restarted daemon.
struct Daemon {
  Daemon(const fs::path& state_dir, int slots, FakeClock& clock)
      : db(state_dir / "jobs.db"),
        files(io),
        jobs(io, config(state_dir, slots), JobShells{db, local, slurm, files, clock}) {}

  static DaemonConfig config(const fs::path& state_dir, int slots) {
    DaemonConfig c;
    c.state_dir = state_dir;
    c.self_exe = "/usr/bin/ddp-launch";
    c.inventory.slots = slots;
    return c;
  }

  JobState state(JobId id) const { return parse_state(jobs.views().get(id)["state"].get<std::string>()).value(); }
  std::string reason(JobId id) const { return jobs.views().get(id)["reason"].get<std::string>(); }
  JobId submit(const std::string& name, int ranks, const std::string& extra = "") {
    auto j =
        jobs.submit("name: " + name + "\ncommand: [/bin/true]\nresources: {nproc_per_node: " + std::to_string(ranks) +
                        "}\n" + extra,
                    name + ".yaml");
    return j["id"].get<JobId>();
  }
  // Answers the oldest start not answered yet: the run started as `pid`.
  void started(pid_t pid) {
    REQUIRE(!local.starts.empty());
    auto s = std::move(local.starts.front());
    local.starts.erase(local.starts.begin());
    s.started(RunHandle{pid, 77, {}});
  }

  boost::asio::io_context io;
  JobDb db;
  ddp::platform::FileWatch files;
  FakeExecutor local{true}, slurm{false};
  JobManager jobs;
};

// The usual case: a fresh state directory, a clock the test moves and a daemon with 2 slots.
struct TwoSlotDaemon {
  ddp::test::TempDir dir;
  FakeClock clock;
  Daemon d{dir.path, 2, clock};
};

void write_event(const fs::path& run_dir, ev::Payload payload) {
  std::ofstream(run_dir / "events.jsonl", std::ios::app) << ev::to_line(ev::Event{std::move(payload), 5.0});
}

}  // namespace

TEST_CASE_FIXTURE(TwoSlotDaemon,
                  "queue and start: jobs wait for slots in order, start when they fit, at the clock's time") {
  auto a = d.submit("a", 2);
  auto b = d.submit("b", 2);
  CHECK(d.state(a) == JobState::Starting);
  CHECK(d.state(b) == JobState::Pending);
  CHECK(d.jobs.views().get(b).contains("pending_reason"));
  REQUIRE(d.local.starts.size() == 1);
  CHECK(d.local.starts[0].id == a);
  CHECK(d.local.starts[0].run_dir == dir.path / "jobs" / std::to_string(a) / "run-0");
  CHECK(fs::exists(d.local.starts[0].run_dir / "events.jsonl"));
  CHECK(d.jobs.views().get(a)["submitted_at"].get<double>() == clock.t);

  clock.t += 10;
  d.started(4242);
  auto rec = d.db.load_jobs().front();
  CHECK(rec.pid == 4242);  // committed before anything else
  CHECK(rec.pid_start_time == 77);
  REQUIRE(d.local.follows.size() == 1);
  CHECK(d.local.follows[0].own_child);
  d.local.update(a, RunUpdate{RunUpdate::Phase::Running, "ranks up", std::nullopt, std::nullopt, false});
  CHECK(d.state(a) == JobState::Running);
  CHECK(d.jobs.views().host()["slots_in_use"] == 2);
}

TEST_CASE_FIXTURE(TwoSlotDaemon, "finish: a run's end settles the job and starts the next in the queue") {
  auto a = d.submit("a", 2);
  auto b = d.submit("b", 1);
  d.started(100);
  clock.t += 60;
  d.local.end(a, ddp::ExitStatus::exited(0));
  CHECK(d.state(a) == JobState::Succeeded);
  CHECK(d.jobs.views().get(a)["finished_at"].get<double>() == clock.t);
  CHECK(d.jobs.views().get(a)["exit_code"] == 0);
  CHECK(d.state(b) == JobState::Starting);  // the slots came free
  d.started(101);
  d.local.end(b, ddp::ExitStatus::exited(3));
  CHECK(d.state(b) == JobState::Failed);
  CHECK(d.jobs.views().get(b)["exit_code"] == 3);
  CHECK(d.jobs.views().counts().by_state[static_cast<std::size_t>(JobState::Failed)] == 1);
}

TEST_CASE_FIXTURE(TwoSlotDaemon, "the run-event reader: the supervisor's events are recorded and move the job") {
  auto a = d.submit("a", 2);
  auto run_dir = d.local.starts[0].run_dir;
  d.started(100);
  write_event(run_dir, ev::RankStarted{0, 0, 0, 555});
  write_event(run_dir, ev::RankStarted{0, 1, 1, 556});
  for (int i = 0; i < 200 && d.state(a) != JobState::Running; ++i) d.io.run_for(std::chrono::milliseconds(10));
  CHECK(d.state(a) == JobState::Running);
  CHECK(d.db.events(a).size() == 2);
  CHECK(d.db.load_jobs().front().events_offset == static_cast<std::int64_t>(fs::file_size(run_dir / "events.jsonl")));
  // The supervisor's own verdict decides (its finished event), read once more at the end.
  write_event(run_dir, ev::Finished{0, "SUCCEEDED", 1, 0});
  d.local.end(a, std::nullopt);
  CHECK(d.state(a) == JobState::Succeeded);
}

TEST_CASE_FIXTURE(TwoSlotDaemon, "the job's view shows its restart budget after the latest restart, of max_restarts") {
  auto a = d.submit("a", 1, "distributed: {max_restarts: 3, restart_budget: progress}\n");
  auto run_dir = d.local.starts[0].run_dir;
  d.started(100);
  CHECK_FALSE(d.jobs.views().get(a).contains("restart_budget"));  // nothing to show before a restart
  ev::Restarting r;
  r.attempt = 1;
  r.no_progress_restarts = 1;
  r.restarts_left = 2;
  write_event(run_dir, r);
  for (int i = 0; i < 200 && !d.jobs.views().get(a).contains("restart_budget"); ++i) {
    d.io.run_for(std::chrono::milliseconds(10));
  }
  const json expected = {
      {"max_restarts", 3}, {"used", 1}, {"restarts_left", 2}, {"counts", "progress"}, {"no_progress_restarts", 1}};
  CHECK(d.jobs.views().get(a)["restart_budget"] == expected);
}

TEST_CASE_FIXTURE(TwoSlotDaemon, "cancel: a queued job at once; a running one through its executor, then CANCELLED") {
  auto a = d.submit("a", 2);
  auto b = d.submit("b", 2);
  d.jobs.cancel(b);
  CHECK(d.state(b) == JobState::Cancelled);
  CHECK_THROWS_AS(d.jobs.cancel(b), JobError);  // already finished: Conflict

  d.started(100);
  d.jobs.cancel(a);
  CHECK(d.state(a) == JobState::Cancelling);
  REQUIRE(d.local.stops.size() == 1);
  CHECK(d.local.stops[0] == std::make_pair(a, false));
  d.local.end(a, ddp::ExitStatus::killed(15));
  CHECK(d.state(a) == JobState::Cancelled);
  CHECK(d.reason(a) == "cancelled by request");
}

TEST_CASE_FIXTURE(TwoSlotDaemon, "cancel before the executor answered: the run is stopped as soon as it has a handle") {
  auto a = d.submit("a", 2);
  d.jobs.cancel(a);
  CHECK(d.state(a) == JobState::Cancelling);
  CHECK(d.local.stops.empty());
  d.started(100);
  REQUIRE(d.local.stops.size() == 1);
  d.local.end(a, ddp::ExitStatus::killed(15));
  CHECK(d.state(a) == JobState::Cancelled);
}

TEST_CASE_FIXTURE(TwoSlotDaemon, "a start that fails fails the job, naming why, and frees its slots") {
  auto a = d.submit("a", 2);
  auto b = d.submit("b", 2);
  auto s = std::move(d.local.starts.front());
  d.local.starts.clear();
  s.failed("cannot start the supervisor /nowhere: No such file or directory");
  CHECK(d.state(a) == JobState::Failed);
  CHECK(d.reason(a) == "cannot start the supervisor /nowhere: No such file or directory");
  CHECK(d.state(b) == JobState::Pending);  // freed, but taken at the next schedule
}

TEST_CASE_FIXTURE(TwoSlotDaemon, "a failed run is retried by policy after its back-off") {
  auto a = d.submit("a", 2, "restart: {policy: on-failure, max_retries: 1, backoff: {initial: 1ms}}\n");
  d.started(100);
  d.local.end(a, ddp::ExitStatus::exited(1));
  CHECK(d.state(a) == JobState::Restarting);
  CHECK(d.db.load_jobs().front().retry_at == doctest::Approx(clock.t + 0.001));
  for (int i = 0; i < 200 && d.local.starts.empty(); ++i) d.io.run_for(std::chrono::milliseconds(5));
  REQUIRE(d.local.starts.size() == 1);
  CHECK(d.local.starts[0].run_dir.filename() == "run-1");
  d.started(101);
  d.local.end(a, ddp::ExitStatus::exited(1));
  CHECK(d.state(a) == JobState::Failed);  // its one retry is spent
  CHECK(d.jobs.views().get(a)["runs"] == 2);
}

TEST_CASE("recovery after a daemon kill: a live run is re-adopted, a dead one settled, the queue kept") {
  ddp::test::TempDir dir;
  FakeClock clock;
  JobId a = 0, b = 0, c = 0;
  {
    Daemon first(dir.path, 3, clock);
    a = first.submit("a", 1);
    b = first.submit("b", 1);
    c = first.submit("c", 2);  // waits: 1 slot left
    first.started(100);
    first.started(200);
    first.local.update(a, RunUpdate{RunUpdate::Phase::Running, "up", std::nullopt, std::nullopt, false});
    CHECK(first.state(c) == JobState::Pending);
  }  // killed: nothing settled, nothing stopped
  Daemon second(dir.path, 3, clock);
  second.local.alive = {100};  // a's supervisor lives on; b's ended while the daemon was down
  second.jobs.recover();
  CHECK(second.state(a) == JobState::Running);
  REQUIRE(!second.local.follows.empty());
  CHECK(second.local.follows[0].id == a);
  CHECK_FALSE(second.local.follows[0].own_child);
  CHECK(second.state(b) == JobState::Failed);  // no event file verdict: it ended without a finished event
  CHECK(second.reason(b).find("ended without a finished event") != std::string::npos);
  CHECK(second.state(c) == JobState::Starting);  // b's slot came free: c fits now
  second.started(300);
  write_event(second.jobs.views().run_dir(a), ev::Finished{0, "SUCCEEDED", 1, 0});
  second.local.end(a, std::nullopt);  // not our child: its event file says how it ended
  CHECK(second.state(a) == JobState::Succeeded);
}

TEST_CASE("recovery: a run started but not recorded is found and adopted, else the job is requeued") {
  ddp::test::TempDir dir;
  FakeClock clock;
  JobId a = 0;
  {
    Daemon first(dir.path, 4, clock);
    a = first.submit("a", 1);
  }  // killed between the start and recording its handle: STARTING, pid 0
  {
    Daemon second(dir.path, 4, clock);
    second.local.unrecorded = RunHandle{4321, 9, {}};
    second.local.alive = {4321};
    second.jobs.recover();
    CHECK(second.state(a) == JobState::Starting);
    CHECK(second.db.load_jobs().front().pid == 4321);  // recorded now
    REQUIRE(second.local.follows.size() == 1);
    CHECK_FALSE(second.local.follows[0].own_child);
    CHECK(second.local.starts.empty());  // not started twice
  }
  ddp::test::TempDir dir2;
  JobId b = 0;
  {
    Daemon first(dir2.path, 4, clock);
    b = first.submit("b", 1);
  }
  Daemon second(dir2.path, 4, clock);  // finds nothing: queued again and started anew
  second.jobs.recover();
  CHECK(second.state(b) == JobState::Starting);
  CHECK(second.local.starts.size() == 1);
  bool requeued = false;
  for (const auto& t : second.db.transitions(b))
    requeued = requeued || (t.to == "PENDING" && t.reason.find("requeued") == 0);
  CHECK(requeued);
}

TEST_CASE("recovery: a retry still in its back-off waits out the rest by the clock") {
  ddp::test::TempDir dir;
  FakeClock clock;
  JobId a = 0;
  {
    Daemon first(dir.path, 2, clock);
    a = first.submit("a", 2, "restart: {policy: on-failure, max_retries: 3, backoff: {initial: 10m, max: 10m}}\n");
    first.started(100);
    first.local.end(a, ddp::ExitStatus::exited(1));
    CHECK(first.state(a) == JobState::Restarting);
  }
  clock.t += 600 - 0.05;  // the daemon was down for all but 50 ms of the back-off
  Daemon second(dir.path, 2, clock);
  second.jobs.recover();
  CHECK(second.state(a) == JobState::Restarting);
  CHECK(second.local.starts.empty());
  for (int i = 0; i < 400 && second.local.starts.empty(); ++i) second.io.run_for(std::chrono::milliseconds(5));
  CHECK(second.local.starts.size() == 1);
}
