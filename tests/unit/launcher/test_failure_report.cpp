// The failure summary and the root_cause event from exits and evidence, without processes.
#include <doctest/doctest.h>
#include <fmt/chrono.h>
#include <fmt/format.h>
#include <stdlib.h>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "launcher/supervisor/failure_report.hpp"
#include "tests/unit/temp_dir.hpp"

using namespace ddp::launcher;
namespace fs = std::filesystem;

namespace {

constexpr double kT = 1767225600.25;  // the reap time of every exit below

std::string at(double t) {
  auto tt = static_cast<std::time_t>(t);
  return fmt::format("{:%H:%M:%S}", fmt::localtime(tt));
}

RankFailure failure(int local_rank, int code, int signal = 0, bool after_teardown = false, bool by_us = false) {
  return RankFailure{RankExit{local_rank, 1000 + local_rank, code, signal, kT}, after_teardown, by_us};
}

RankEvidence evidence(int rank, std::vector<std::string> last_stderr = {}) {
  RankEvidence ev;
  ev.rank = rank;
  ev.group_rank = 0;
  ev.last_stderr = std::move(last_stderr);
  return ev;
}

FailureReportInput job(std::vector<RankFailure> failures, std::vector<std::optional<RankEvidence>> ev) {
  FailureReportInput in;
  in.final = true;
  in.state = GroupState::Failed;
  in.attempt = 0;
  in.exit_code = 1;
  in.node_name = "hostA";
  in.worker_argv = {"/usr/bin/python3", "-u", "train.py"};
  in.failures = std::move(failures);
  in.teardown_began = kT;
  in.evidence = std::move(ev);
  return in;
}

}  // namespace

TEST_CASE("failure report: one rank failed with an error file: it is the root cause, quoted") {
  auto ev = evidence(1, {"Traceback (most recent call last):", "ValueError: bad batch"});
  ev.error_file = ErrorFileRecord{"ValueError: bad batch", std::nullopt};
  ev.error_file_written = kT - 0.01;
  auto r = failure_report(job({failure(1, 3)}, {ev}));
  CHECK(r.text ==
        "\nddp-launch: job FAILED after 1 attempt(s), exit code 1\n"
        "  Root cause: rank 1 (local 1) on node 0 (hostA), pid 1001: exited with code 3 at " +
            at(kT) +
            "\n"
            "    error file: ValueError: bad batch\n"
            "    last stderr lines:\n"
            "      Traceback (most recent call last):\n"
            "      ValueError: bad batch\n");
  REQUIRE(r.root_cause);
  CHECK(r.root_cause->rank == 1);
  CHECK(r.root_cause->exit.exit_code == 3);
  CHECK(r.root_cause->exit.signal == 0);
  CHECK(r.root_cause->role == "original failure");
  CHECK(r.root_cause->error == std::optional<std::string>("ValueError: bad batch"));
}

TEST_CASE("failure report: a signal death names the signal; the peers we stopped follow as teardown") {
  auto in = job({failure(0, 0, SIGSEGV), failure(1, 0, SIGTERM, true, true)}, {evidence(0), evidence(1)});
  auto r = failure_report(in);
  CHECK(r.text.find("  Root cause: rank 0 (local 0) on node 0 (hostA), pid 1000: killed by SIGSEGV at ") !=
        std::string::npos);
  CHECK(r.text.find(
            "  Rank: rank 1 (local 1) on node 0 (hostA), pid 1001: killed by SIGTERM (stopped by the teardown) at ") !=
        std::string::npos);
  CHECK(r.text.find("Root cause: rank 0") < r.text.find("Rank: rank 1"));
  REQUIRE(r.root_cause);
  CHECK(r.root_cause->exit.signal == SIGSEGV);
  CHECK_FALSE(r.root_cause->error);
}

TEST_CASE("failure report: an OOM kill says so, with the evidence") {
  auto ev = evidence(2);
  ev.oom = "memory.events oom_kill 1";
  auto r = failure_report(job({failure(2, 0, SIGKILL)}, {ev}));
  CHECK(r.text.find("pid 1002: killed by the OOM killer (memory.events oom_kill 1, SIGKILL) at ") != std::string::npos);
}

TEST_CASE("failure report: a rank the torch elastic timer killed is the root cause, with the deadline it missed") {
  // Rank 1 was killed by the timer (SIGKILL at kT - 0.2, its deadline kT - 0.25); rank 0 lost it
  // (gloo) and was reaped first.
  auto lost = evidence(0, {"RuntimeError: [/gloo/transport/tcp/pair.cc:598] Connection closed by peer"});
  auto killed = evidence(1);
  killed.timer_kill = TimerKillEvidence{"/w/worker.py#14", kT - 0.25, SIGKILL, kT - 0.2, 1001};
  auto r = failure_report(job({failure(0, 1), failure(1, 0, SIGKILL)}, {lost, killed}));
  auto deadline = at(kT - 0.25) + ".000";
  CHECK(r.text.find("  Root cause: rank 1 (local 1) on node 0 (hostA), pid 1001: killed by SIGKILL (the torch elastic "
                    "timer sent SIGKILL: scope /w/worker.py#14 missed its deadline " +
                    deadline + ") at ") != std::string::npos);
  CHECK(r.text.find("    torch elastic timer: the `with expires(...)` block at /w/worker.py#14 did not finish by " +
                    deadline + "; SIGKILL sent at " + at(kT - 0.2) + ".050 (0.05 s later)\n") != std::string::npos);
  CHECK(r.text.find("Rank: rank 0 (local 0) on node 0 (hostA), pid 1000: exited with code 1 (lost a peer)") !=
        std::string::npos);
  REQUIRE(r.root_cause);
  CHECK(r.root_cause->rank == 1);
  CHECK(r.root_cause->role == "original failure");
  // The timer signalled a process the rank started (its own pid is 1001): the summary says which.
  killed.timer_kill->pid = 1500;
  r = failure_report(job({failure(1, 1)}, {killed}));
  CHECK(r.text.find("exited with code 1 (the torch elastic timer sent SIGKILL to its process 1500: scope") !=
        std::string::npos);
  CHECK(r.text.find("pass scope=") == std::string::npos);
  // torch 1.13's default scope names contextlib, not the caller: the summary says how to name the block.
  killed.timer_kill->scope_id = "/usr/lib/python3.11/contextlib.py#137";
  r = failure_report(job({failure(1, 0, SIGKILL)}, {killed}));
  CHECK(r.text.find("pass scope=\"...\" to expires() to name the block") != std::string::npos);
}

TEST_CASE("failure report: several ranks; the one whose peers lost it is the root cause, global ranks shown") {
  // Node 1 of a job: local ranks 0 and 1 are global ranks 4 and 5. Local 0 says a peer went away.
  auto lost = evidence(4, {"RuntimeError: [/gloo/transport/tcp/pair.cc:598] Connection closed by peer"});
  lost.group_rank = 1;
  auto own = evidence(5, {"ZeroDivisionError: division by zero"});
  own.group_rank = 1;
  auto in = job({failure(0, 1), failure(1, 1)}, {lost, own});
  in.node_rank = 1;
  auto r = failure_report(in);
  CHECK(r.text.find("  Root cause: rank 5 (local 1) on node 1 (hostA), pid 1001: exited with code 1 at ") !=
        std::string::npos);
  CHECK(r.text.find("  Rank: rank 4 (local 0) on node 1 (hostA), pid 1000: exited with code 1 (lost a peer) at ") !=
        std::string::npos);
  CHECK(r.text.find("ZeroDivisionError") != std::string::npos);
  CHECK(r.text.find("Connection closed by peer") == std::string::npos);  // only the root cause is quoted
  REQUIRE(r.root_cause);
  CHECK(r.root_cause->rank == 5);
}

TEST_CASE("failure report: a handled signal is no root cause; an attempt before a restart; nothing to say") {
  auto in = job({failure(0, 0, SIGTERM, true, true)}, {evidence(0)});
  in.stop_signal = SIGTERM;
  in.state = GroupState::Interrupted;
  in.exit_code = 143;
  auto r = failure_report(in);
  CHECK(r.text.find("job INTERRUPTED after 1 attempt(s), exit code 143\n  Stopped by SIGTERM (forwarded to every "
                    "worker group)\n  Rank: rank 0") != std::string::npos);
  CHECK_FALSE(r.root_cause);

  auto attempt = job({failure(0, 2)}, {std::nullopt});  // no worker known: the local rank stands in
  attempt.final = false;
  attempt.attempt = 1;
  attempt.node_rank = 3;
  auto a = failure_report(attempt);
  CHECK(a.text.rfind("\nddp-launch: attempt 1 failed\n  Root cause: rank 0 (local 0) on node 3 (hostA)", 0) == 0);

  auto quiet = job({}, {});
  quiet.final = false;
  CHECK(failure_report(quiet).text.empty());
}

TEST_CASE("failure report: the rendezvous watchdog's finding and a closed rendezvous are root causes") {
  auto in = job({failure(0, 0, SIGTERM, true, true)}, {evidence(0)});
  in.rendezvous_timed_out = true;
  in.rendezvous_report = "rendezvous not complete after 5 s: 1 of 2 ranks reached the store";
  auto r = failure_report(in);
  CHECK(r.text.find("  Root cause: rendezvous not complete after 5 s") != std::string::npos);
  CHECK(r.text.find("  Rank: rank 0") != std::string::npos);
  CHECK_FALSE(r.root_cause);

  auto closed = job({}, {});
  closed.rendezvous_close_reason = "node n2 left";
  CHECK(failure_report(closed).text.find("  Root cause: the rendezvous ended the job: node n2 left\n") !=
        std::string::npos);
}

TEST_CASE("failure report: a hang is the root cause, naming the suspect; the ranks we stopped follow") {
  SupervisorPolicy policy;
  policy.nproc = 2;
  SupervisorMachine m(policy);
  m.on(input::Start{});
  m.on(input::HangDetected{0});
  m.on(input::RankExited{RankExit{1, 1001, -1, SIGTERM, kT}});
  m.on(input::RankExited{RankExit{0, 1000, -1, SIGTERM, kT}});
  auto in = failure_report_input(m, true);
  CHECK(in.hang_detected);
  in.exit_code = 1;
  in.node_name = "hostA";
  HangVerdict v;
  v.silent = {{1, 1, 5.1}, {0, 0, 4.9}};
  v.first_by_s = 0.2;
  v.timeout_s = 5;
  v.setting = "5s";
  in.hang = v;
  in.evidence = {evidence(1), evidence(0)};
  auto r = failure_report(in);
  CHECK(r.text.find("  Root cause: rank 1 (local 1) made no progress for 5.1 s (--hang-timeout 5s) and went silent "
                    "first: it hangs\n    rank 0 (local 0) waited: silent for 4.9 s") != std::string::npos);
  CHECK(r.text.find("  Rank: rank 1 (local 1)") != std::string::npos);  // killed by our SIGTERM: no root cause
  CHECK(r.text.find("  Root cause: rank 0") == std::string::npos);
  CHECK_FALSE(r.root_cause);
}

TEST_CASE("failure report: the error file is read with its time; none written, none read") {
  ddp::test::TempDir tmp("failure_report_test");
  const fs::path& dir = tmp.path;
  RankEvidence none;
  read_error_file(dir / "error.json", none);
  CHECK_FALSE(none.error_file);
  CHECK_FALSE(none.error_file_written);
  std::ofstream(dir / "error.json") << R"({"message": {"message": "KeyError: 'x'", "extraInfo": {}}})";
  RankEvidence ev;
  read_error_file(dir / "error.json", ev);
  REQUIRE(ev.error_file);
  CHECK(ev.error_file->message.rfind("KeyError: 'x'", 0) == 0);
  CHECK(ev.error_file_written.value_or(0) > 1.7e9);
}

TEST_CASE("failure report input: the machine's state, attempt, failures and what stopped the group") {
  SupervisorPolicy policy;
  policy.nproc = 2;
  SupervisorMachine m(policy);
  m.on(input::Start{});
  m.on(input::RankExited{RankExit{1, 1001, 3, 0, kT}});
  m.on(input::RankExited{RankExit{0, 1000, -1, SIGTERM, kT + 1}});
  auto in = failure_report_input(m, true);
  CHECK(in.final);
  CHECK(in.state == m.state());
  CHECK(in.attempt == 0);
  CHECK(in.stop_signal == 0);  // a rank's failure stopped it
  CHECK_FALSE(in.rendezvous_timed_out);
  REQUIRE(in.failures.size() == m.failures().size());
  CHECK(in.failures.front().exit.local_rank == 1);
  REQUIRE(in.teardown_began.has_value());
  CHECK(*in.teardown_began == kT);
  CHECK(in.evidence.empty());  // the shell's part

  SupervisorMachine s(policy);
  s.on(input::Start{});
  s.on(input::SignalReceived{SIGINT});
  auto stopped = failure_report_input(s, false);
  CHECK_FALSE(stopped.final);
  CHECK(stopped.stop_signal == SIGINT);
  CHECK(stopped.state == GroupState::Stopping);
}
