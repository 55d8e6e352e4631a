#include <doctest/doctest.h>
#include <signal.h>

#include <string>

#include "jobs/run_outcome.hpp"

using namespace ddp::jobs;
namespace ev = ddp::events;
using ddp::ExitStatus;

namespace {
RunMemory fold(const std::vector<ev::Payload>& events) {
  RunMemory m;
  for (const auto& e : events) absorb_event(m, {e});
  return m;
}
ev::RankExited rank_exited(int rank, ExitStatus status) { return {0, rank, rank, 100 + rank, status, false}; }
ev::RootCause root_cause(int rank, ExitStatus status, std::optional<std::string> error) {
  return {0, rank, rank, 100 + rank, status, "original failure", std::move(error)};
}
ev::Finished finished(int code) { return {code, code ? "FAILED" : "SUCCEEDED", 1, 0}; }
// How the supervisor ended, as the local executor reports it.
ExitStatus exited(int code) { return ExitStatus::exited(code); }
ExitStatus killed(int sig) { return ExitStatus::killed(sig); }
}  // namespace

TEST_CASE("the first failing rank_exited is the failure until a root_cause replaces it") {
  auto m = fold({rank_exited(0, ExitStatus::exited(0)), rank_exited(1, ExitStatus::killed(SIGTERM)),
                 rank_exited(2, ExitStatus::exited(3))});
  CHECK(m.first_failure == "rank 1 was killed by SIGTERM");
  CHECK(m.first_failure_code == 128 + SIGTERM);
  absorb_event(m, {root_cause(2, ExitStatus::exited(3), "ValueError: boom\nTraceback")});
  CHECK(m.first_failure == "rank 2 exited with code 3: ValueError: boom");
  CHECK(m.first_failure_code == 3);
}

TEST_CASE("a long error line is cut at 200 bytes, never inside a UTF-8 character") {
  std::string error(199, 'x');
  error += "é and more";  // é's two bytes straddle byte 200
  auto m = fold({root_cause(0, ExitStatus::exited(1), error)});
  CHECK(m.first_failure == "rank 0 exited with code 1: " + std::string(199, 'x') + "…");
}

TEST_CASE("restarting starts a fresh attempt: the failure moves to previous_failure") {
  auto m = fold({rank_exited(1, ExitStatus::exited(3)), ev::Restarting{1, 0}});
  CHECK(m.first_failure.empty());
  CHECK_FALSE(m.first_failure_code);
  CHECK(m.previous_failure == "rank 1 exited with code 3");
  absorb_event(m, {finished(0)});
  CHECK(m.finished_seen);
  CHECK(m.finished_exit == 0);
}

TEST_CASE("a hang is the failure: its text stays, the suspect's exit gives the code a retry policy judges") {
  ev::HangDetected hang{0, 1, {1, 0}, {5.04, 4.8}, {}, 0.24, "5s", 5.0, std::nullopt};
  // The teardown's exits follow, the waiting rank 0 first.
  auto m = fold({hang, rank_exited(0, ExitStatus::killed(SIGTERM)), rank_exited(1, ExitStatus::killed(SIGKILL))});
  CHECK(m.first_failure == "rank 1 hung: no progress for 5.0 s (--hang-timeout 5s); rank(s) 0 waited");
  CHECK(m.first_failure_code == 128 + SIGKILL);
  JobSpec spec;
  spec.restart.policy = RestartPolicy::ExitCode;
  spec.restart.max_retries = 2;
  CHECK(decide_retry(spec, 1, m.first_failure_code, std::nullopt).retry);  // 128-255 by default
  spec.restart.policy = RestartPolicy::OnFailure;
  CHECK(decide_retry(spec, 1, m.first_failure_code, std::nullopt).retry);
  CHECK_FALSE(judge_run(m, RunEnd{exited(1), std::nullopt, 1, "/r"}).succeeded);
  // A restart within the supervisor: the hang is what it restarted after; the next attempt is fresh.
  absorb_event(m, {ev::Restarting{1, 0}});
  CHECK(m.previous_failure == "rank 1 hung: no progress for 5.0 s (--hang-timeout 5s); rank(s) 0 waited");
  absorb_event(m, {rank_exited(0, ExitStatus::exited(3))});
  CHECK(m.first_failure == "rank 0 exited with code 3");
  // Ranks that went silent together are not told apart; a stacks file is named.
  ev::HangDetected together{0, 0, {0, 1}, {5.0, 5.0}, {}, 0.001, "auto", 60.0, std::string("/r/stacks.txt")};
  CHECK(hang_text(together) ==
        "ranks 0, 1 stopped making progress together (5.0 s, --hang-timeout auto): a hang (stacks: /r/stacks.txt)");
}

TEST_CASE("event lines: complete lines only, unreadable ones reported, empty ones skipped") {
  auto chunk = parse_event_lines(
      "{\"event\":\"restarting\",\"attempt\":1,\"failed_attempt\":0,\"new\":2}\n\nnot json\n"
      "{\"event\":\"finished\"}\n{\"event\":\"fin");
  CHECK(chunk.consumed == 93);  // up to the newline after the bad finished
  REQUIRE(chunk.events.size() == 1);
  CHECK(chunk.events[0].event.as<ev::Restarting>()->attempt == 1);
  CHECK(chunk.events[0].raw["new"] == 2);  // kept as written, for the database
  REQUIRE(chunk.unreadable.size() == 2);
  CHECK(chunk.unreadable[1] == "finished event: field \"exit_code\" is missing");
  CHECK(parse_event_lines("{\"event\":\"partial").consumed == 0);
}

TEST_CASE("judge_run: the finished event decides; else how the supervisor ended") {
  auto ok = judge_run(fold({finished(0)}), RunEnd{exited(0), std::nullopt, 7, "/r"});
  CHECK(ok.succeeded);
  CHECK(ok.exit_code == 0);
  CHECK(ok.text == "all ranks exited with code 0");

  auto failed =
      judge_run(fold({rank_exited(1, ExitStatus::exited(3)), finished(1)}), RunEnd{exited(1), std::nullopt, 7, "/r"});
  CHECK_FALSE(failed.succeeded);
  CHECK(failed.exit_code == 1);
  CHECK(failed.text == "rank 1 exited with code 3");

  auto no_event = judge_run(RunMemory{}, RunEnd{killed(SIGKILL), std::nullopt, 7, "/r"});
  CHECK_FALSE(no_event.succeeded);
  CHECK(no_event.exit_code == 128 + SIGKILL);
  CHECK(no_event.text == "the supervisor (pid 7) was killed by SIGKILL before it finished");

  auto early = judge_run(RunMemory{}, RunEnd{exited(2), std::nullopt, 7, "/r"});
  CHECK(early.text == "the supervisor (pid 7) exited with code 2 before it started the job (see /r/supervisor.log)");

  // Not the daemon's child (re-adopted, or ended while it was down): no wait status.
  auto unknown = judge_run(RunMemory{}, RunEnd{std::nullopt, std::nullopt, 7, "/r"});
  CHECK_FALSE(unknown.succeeded);
  CHECK_FALSE(unknown.exit_code);
  CHECK(unknown.text == "the supervisor (pid 7) ended without a finished event (see /r/supervisor.log)");

  auto bare_finish = judge_run(fold({finished(4)}), RunEnd{});
  CHECK(bare_finish.text == "the supervisor exited with code 4");
}

TEST_CASE("an executor's own end report (Slurm) counts as the finish") {
  RunMemory m;
  absorb_executor_end(m, false, 0, "Slurm job 12 FAILED");
  auto v = judge_run(m, RunEnd{});
  CHECK_FALSE(v.succeeded);
  CHECK(v.exit_code == 1);  // a failure is never code 0
  CHECK(v.text == "Slurm job 12 FAILED");
  RunMemory ok;
  absorb_executor_end(ok, true, 0, "Slurm job 13 COMPLETED");
  CHECK(judge_run(ok, RunEnd{}).text == "Slurm job 13 COMPLETED");
}

TEST_CASE("straggler verdicts: each rank's latest, kept across restarts of the run, never a failure") {
  RunMemory m;
  absorb_event(m, {ev::Straggler{0, 1, 0.5, 0.1, 0.2}, 10.0});
  absorb_event(m, {ev::Straggler{0, 2, 0.6, 0.1, 0.17}, 11.0});
  absorb_event(m, {ev::Restarting{1, 0}, 12.0});
  absorb_event(m, {ev::Straggler{1, 1, 0.3, 0.1, 0.33}, 13.0});
  REQUIRE(m.stragglers.size() == 2);
  CHECK(m.stragglers.at(1).verdict == ev::Straggler{1, 1, 0.3, 0.1, 0.33});
  CHECK(m.stragglers.at(1).time == 13.0);
  CHECK(m.stragglers.at(2).verdict.ratio == 0.6);
  CHECK(m.first_failure.empty());
  CHECK_FALSE(m.first_failure_code);
  absorb_event(m, {finished(0)});
  CHECK(judge_run(m, RunEnd{exited(0), std::nullopt, 1, "/r"}).succeeded);
}

TEST_CASE("filestore_found: the job's reason names the stale FileStore, its age and clean") {
  auto m = fold({root_cause(1, ExitStatus::exited(1), "RuntimeError: Connection refused"),
                 ev::FilestoreFound{0, "/tmp/j/sharedfile", "stale", 185.4, false, "…"}});
  CHECK(m.first_failure ==
        "rank 1 exited with code 1: RuntimeError: Connection refused; stale FileStore /tmp/j/sharedfile (left by an "
        "earlier run, last written 3 min before the run): remove it with `ddp-launch clean /tmp/j/sharedfile`");
  CHECK(m.first_failure_code == 1);

  auto removed =
      fold({root_cause(1, ExitStatus::exited(1), std::nullopt),
            ev::FilestoreFound{0, "/tmp/j/sharedfile", "stale", std::nullopt, true, "…"}, ev::Restarting{1, 0}});
  CHECK(removed.previous_failure ==
        "rank 1 exited with code 1; stale FileStore /tmp/j/sharedfile (left by an earlier run) removed before the "
        "restart");

  auto in_use = fold({root_cause(0, ExitStatus::exited(1), std::nullopt),
                      ev::FilestoreFound{0, "/tmp/j/s", "in_use", 10.0, false, "…"}});
  CHECK(in_use.first_failure.find("FileStore /tmp/j/s is in use by a process outside this run") != std::string::npos);
  auto unsure = fold({root_cause(0, ExitStatus::exited(1), std::nullopt),
                      ev::FilestoreFound{0, "/tmp/j/s", "unsure", std::nullopt, false, "…"}});
  CHECK(unsure.first_failure.find("`ddp-launch clean --dry-run /tmp/j/s`") != std::string::npos);
}

TEST_CASE("restarting: the supervisor's restart budget is kept for the job's views") {
  RunMemory m;
  absorb_event(m, {ev::Restarting{1, 0}});  // an older supervisor, or a membership change: nothing charged
  CHECK_FALSE(m.restarts_left);
  ev::Restarting r{2, 1};
  r.restarts_left = 3;
  r.no_progress_restarts = 2;
  absorb_event(m, {r});
  CHECK(m.restarts_left == 3);
  CHECK(m.no_progress_restarts == 2);
  ev::Restarting free_one{3, 2};  // not charged: the last count stays
  absorb_event(m, {free_one});
  CHECK(m.restarts_left == 3);
  CHECK(m.no_progress_restarts == 0);
}
