#include <doctest/doctest.h>

#include <algorithm>
#include <csignal>

#include "launcher/supervisor/supervisor_config.hpp"
#include "launcher/supervisor/supervisor_machine.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;

namespace {

template <typename T>
bool has(const std::vector<Action>& actions) {
  return std::any_of(actions.begin(), actions.end(), [](const Action& a) { return std::holds_alternative<T>(a); });
}

template <typename T>
T get(const std::vector<Action>& actions) {
  for (const auto& a : actions) {
    if (auto* p = std::get_if<T>(&a)) return *p;
  }
  FAIL("action not found");
  return T{};
}

input::RankExited exited(int local_rank, int code, int signal = 0) {
  return {RankExit{local_rank, 1000 + local_rank, code, signal, 0}};
}

SupervisorPolicy policy(int nproc, int max_restarts = 0) {
  SupervisorPolicy p;
  p.nproc = nproc;
  p.max_restarts = max_restarts;
  p.shutdown_grace = 5000ms;
  p.restart_backoff = 100ms;
  return p;
}

}  // namespace

TEST_CASE("all ranks exit 0: success") {
  SupervisorMachine m(policy(2));
  auto a = m.on(input::Start{});
  CHECK(has<action::ResetStore>(a));
  CHECK(get<action::SpawnGroup>(a).attempt == 0);
  CHECK(m.on(exited(0, 0)).empty());
  auto done = m.on(exited(1, 0));
  CHECK(get<action::Finish>(done).exit_code == 0);
  CHECK(m.state() == GroupState::Succeeded);
}

TEST_CASE("first failure tears the group down; no budget: failed with the root cause first") {
  SupervisorMachine m(policy(3));
  m.on(input::Start{});
  auto a = m.on(exited(1, 3));
  CHECK(get<action::SignalGroup>(a).signo == SIGTERM);
  CHECK(get<action::ArmGrace>(a).after == 5000ms);
  CHECK(m.state() == GroupState::Stopping);
  CHECK(m.on(exited(0, 0, SIGTERM)).empty());
  auto done = m.on(exited(2, 0, SIGTERM));
  CHECK(get<action::Finish>(done).exit_code == 1);
  CHECK(m.state() == GroupState::Failed);
  REQUIRE(m.failures().size() == 3);
  CHECK(m.failures()[0].exit.local_rank == 1);
  CHECK(m.failures()[0].exit.exit_code == 3);
}

TEST_CASE("a straggler that ignores SIGTERM is killed when the grace expires") {
  SupervisorMachine m(policy(2));
  m.on(input::Start{});
  m.on(exited(0, 1));
  auto kill = m.on(input::GraceExpired{0});
  CHECK(get<action::SignalGroup>(kill).signo == SIGKILL);
  CHECK(m.on(input::GraceExpired{7}).empty());  // a stale timer is ignored
}

TEST_CASE("restart within budget: backoff, fresh store, next attempt; success ends it") {
  SupervisorMachine m(policy(2, 2));
  m.on(input::Start{});
  m.on(exited(0, 3));
  auto gone = m.on(exited(1, 0, SIGTERM));
  auto backoff = get<action::ArmBackoff>(gone);
  CHECK(backoff.attempt == 1);
  CHECK(backoff.after == 0ms);  // the first restart is immediate
  CHECK(m.state() == GroupState::Restarting);
  auto spawn = m.on(input::BackoffExpired{1});
  CHECK(has<action::ResetStore>(spawn));
  CHECK(get<action::SpawnGroup>(spawn).attempt == 1);
  CHECK(m.attempt() == 1);
  m.on(exited(0, 0));
  CHECK(get<action::Finish>(m.on(exited(1, 0))).exit_code == 0);
}

TEST_CASE("the backoff grows per attempt after the first and the budget runs out") {
  SupervisorMachine m(policy(1, 3));
  m.on(input::Start{});
  CHECK(get<action::ArmBackoff>(m.on(exited(0, 1))).after == 0ms);
  m.on(input::BackoffExpired{1});
  CHECK(get<action::ArmBackoff>(m.on(exited(0, 1))).after == 100ms);
  m.on(input::BackoffExpired{2});
  CHECK(get<action::ArmBackoff>(m.on(exited(0, 1))).after == 200ms);
  m.on(input::BackoffExpired{3});
  CHECK(get<action::Finish>(m.on(exited(0, 1))).exit_code == 1);
}

TEST_CASE("a handled signal is forwarded; no restart; 128+signo") {
  SupervisorMachine m(policy(2, 5));
  m.on(input::Start{});
  auto a = m.on(input::SignalReceived{SIGTERM});
  CHECK(get<action::SignalGroup>(a).signo == SIGTERM);
  m.on(exited(0, 0, SIGTERM));
  auto done = m.on(exited(1, 0, SIGTERM));
  CHECK(get<action::Finish>(done).exit_code == 128 + SIGTERM);
  CHECK(m.state() == GroupState::Interrupted);
}

TEST_CASE("a second Ctrl-C kills at once") {
  SupervisorMachine m(policy(2));
  m.on(input::Start{});
  CHECK(get<action::SignalGroup>(m.on(input::SignalReceived{SIGINT})).signo == SIGINT);
  CHECK(get<action::SignalGroup>(m.on(input::SignalReceived{SIGINT})).signo == SIGKILL);
}

TEST_CASE("a signal during the restart backoff ends the job") {
  SupervisorMachine m(policy(1, 3));
  m.on(input::Start{});
  m.on(exited(0, 1));
  auto done = m.on(input::SignalReceived{SIGTERM});
  CHECK(get<action::Finish>(done).exit_code == 128 + SIGTERM);
  CHECK(m.on(input::BackoffExpired{1}).empty());
}

TEST_CASE("a rendezvous timeout fails the attempt like a rank failure: teardown, then restart or fail") {
  SupervisorMachine m(policy(2, 1));
  m.on(input::Start{});
  CHECK(m.on(input::RendezvousTimeout{7}).empty());  // a stale timer
  auto stop = m.on(input::RendezvousTimeout{0});
  CHECK(get<action::SignalGroup>(stop).signo == SIGTERM);
  CHECK(m.rendezvous_timed_out());
  m.on(exited(0, 0, SIGTERM));
  CHECK(get<action::ArmBackoff>(m.on(exited(1, 0, SIGTERM))).attempt == 1);
  m.on(input::BackoffExpired{1});
  CHECK_FALSE(m.rendezvous_timed_out());
  m.on(input::RendezvousTimeout{1});
  m.on(exited(0, 0, SIGTERM));
  CHECK(get<action::Finish>(m.on(exited(1, 0, SIGTERM))).exit_code == 1);
}

TEST_CASE("a hang fails the attempt like a rank failure: teardown, then restart within the budget") {
  SupervisorMachine m(policy(2, 1));
  m.on(input::Start{});
  CHECK(m.on(input::HangDetected{4}).empty());  // a stale verdict
  auto stop = m.on(input::HangDetected{0});
  CHECK(get<action::SignalGroup>(stop).signo == SIGTERM);
  CHECK(has<action::ArmGrace>(stop));
  CHECK(m.hang_detected());
  CHECK(m.on(input::HangDetected{0}).empty());  // already stopping
  m.on(exited(0, 0, SIGTERM));
  CHECK(get<action::ArmBackoff>(m.on(exited(1, 0, SIGTERM))).attempt == 1);
  m.on(input::BackoffExpired{1});
  CHECK_FALSE(m.hang_detected());
  // The budget is spent: the next hang fails the job.
  m.on(input::HangDetected{1});
  m.on(exited(0, 0, SIGTERM));
  CHECK(get<action::Finish>(m.on(exited(1, 0, SIGTERM))).exit_code == 1);
  CHECK(m.state() == GroupState::Failed);
}

TEST_CASE("--on-hang fail: a hang fails the job even with restarts left; other failures still restart") {
  auto p = policy(2, 3);
  p.restart_on_hang = false;
  SupervisorMachine m(p);
  m.on(input::Start{});
  m.on(exited(1, 3));  // an ordinary failure: restarted
  m.on(exited(0, 0, SIGTERM));
  m.on(input::BackoffExpired{1});
  CHECK(m.attempt() == 1);
  m.on(input::HangDetected{1});
  m.on(exited(1, 0, SIGTERM));
  auto done = m.on(exited(0, 0, SIGKILL));
  CHECK(get<action::Finish>(done).exit_code == 1);
  CHECK(m.state() == GroupState::Failed);
  CHECK(m.hang_detected());
}

TEST_CASE("a signal during a hang's teardown ends the job as interrupted, not restarted") {
  SupervisorMachine m(policy(1, 3));
  m.on(input::Start{});
  m.on(input::HangDetected{0});
  m.on(input::SignalReceived{SIGTERM});
  CHECK(get<action::Finish>(m.on(exited(0, 0, SIGTERM))).exit_code == 128 + SIGTERM);
}

TEST_CASE("dynamic rendezvous: a round that ends stops the group and rejoins without spending budget") {
  SupervisorMachine m(policy(2, 0));
  m.on(input::Start{});
  auto stop = m.on(input::RoundEnded{false, std::nullopt});
  CHECK(get<action::SignalGroup>(stop).signo == SIGTERM);
  m.on(exited(0, 0, SIGTERM));
  auto gone = m.on(exited(1, 0, SIGTERM));
  CHECK(get<action::ArmBackoff>(gone).attempt == 1);
  CHECK(m.stopped_by_round());
  CHECK(get<action::SpawnGroup>(m.on(input::BackoffExpired{1})).attempt == 1);
  // Closed elsewhere: stop and fail.
  m.on(input::RoundEnded{true, std::nullopt});
  m.on(exited(0, 0, SIGTERM));
  CHECK(get<action::Finish>(m.on(exited(1, 0, SIGTERM))).exit_code == 1);
}

RestartDecision job_decision(RestartVerdict v, int left, bool charged = true) {
  RestartDecision d;
  d.verdict = v;
  d.charged = charged;
  d.restarts_left = left;
  return d;
}

TEST_CASE("dynamic rendezvous: the host's decision is the node's; a spent budget ends it with its exit code") {
  auto p = policy(1, 5);
  p.rendezvous_budget = true;
  SupervisorMachine m(p);
  m.on(input::Start{});
  // Its group failed: it rejoins (saying so), and its own budget is not touched.
  CHECK(has<action::ArmBackoff>(m.on(exited(0, 1))));
  CHECK(m.own_failure());
  CHECK_FALSE(m.restart_decision());
  CHECK(m.restarts_left() == 5);
  // A membership change: no decision, nothing charged.
  CHECK(m.on(input::RoundAdmitted{true, std::nullopt}).empty());
  CHECK_FALSE(m.own_failure());
  CHECK(m.restarts_left() == 5);
  m.on(input::BackoffExpired{1});
  // The host charged the job's budget (wherever the failure was): the same count here.
  CHECK(has<action::ArmBackoff>(m.on(exited(0, 1))));
  CHECK(m.on(input::RoundAdmitted{false, job_decision(RestartVerdict::Restart, 0)}).empty());
  CHECK(m.restarts_left() == 0);
  m.on(input::BackoffExpired{2});
  // A round stopped by another node's failure: not this node's failure to report.
  m.on(input::RoundEnded{false, std::nullopt});
  m.on(exited(0, 0, SIGTERM));
  CHECK_FALSE(m.own_failure());
  // The host closes the rendezvous with its decision: the node ends with that exit code.
  auto done = m.on(input::RoundEnded{true, job_decision(RestartVerdict::NoProgress, 0, false)});
  CHECK(get<action::Finish>(done).exit_code == kNoProgressExitCode);
  CHECK(m.restart_decision()->verdict == RestartVerdict::NoProgress);
  CHECK(m.state() == GroupState::Failed);
}

TEST_CASE("dynamic rendezvous: a close with the job's decision while running stops the group, then its exit code") {
  auto p = policy(1, 1);
  p.rendezvous_budget = true;
  SupervisorMachine m(p);
  m.on(input::Start{});
  CHECK(has<action::SignalGroup>(m.on(input::RoundEnded{true, job_decision(RestartVerdict::BudgetSpent, 0, false)})));
  CHECK(get<action::Finish>(m.on(exited(0, 0, SIGTERM))).exit_code == 1);
  CHECK(m.restart_decision()->verdict == RestartVerdict::BudgetSpent);
}

TEST_CASE("dynamic rendezvous: a group that keeps failing backs off as in the static mode (issue 25, 3.12)") {
  // --rdzv-backend c10d restarted a crash loop at once every time: 500 restarts in ~5 s.
  auto p = policy(1, 100);
  p.rendezvous_budget = true;
  p.max_backoff = 400ms;
  p.max_no_progress_restarts = 100;  // a crash loop on purpose: not ended for its lack of progress
  SupervisorMachine m(p);
  m.on(input::Start{});
  std::vector<std::chrono::milliseconds> waits;
  for (int attempt = 1; attempt <= 6; ++attempt) {
    waits.push_back(get<action::ArmBackoff>(m.on(exited(0, 1))).after);
    CHECK(m.on(input::RoundAdmitted{false, job_decision(RestartVerdict::Restart, 100 - attempt)}).empty());
    REQUIRE(has<action::SpawnGroup>(m.on(input::BackoffExpired{attempt})));
  }
  CHECK(waits == std::vector<std::chrono::milliseconds>{0ms, 100ms, 200ms, 400ms, 400ms, 400ms});
  // A restart for a membership change (a peer's failure, excused) does not grow the wait.
  CHECK(get<action::ArmBackoff>(m.on(exited(0, 1))).after == 400ms);
  CHECK(m.on(input::RoundAdmitted{true, std::nullopt}).empty());
  m.on(input::BackoffExpired{7});
  CHECK(get<action::ArmBackoff>(m.on(exited(0, 1))).after == 400ms);
}

TEST_CASE("a signal while waiting for the first rendezvous round ends the run at once (torchrun: 128+signo)") {
  for (int signo : {SIGTERM, SIGINT}) {
    SupervisorMachine m(policy(2));
    auto a = m.on(input::SignalReceived{signo});
    CHECK(get<action::Finish>(a).exit_code == 128 + signo);
    CHECK(m.state() == GroupState::Interrupted);
    CHECK(m.stop_signal() == signo);
    CHECK(m.on(input::Start{}).empty());  // a round that closes afterwards starts nothing
  }
}

TEST_CASE("a signal during a spawn cut short: the ranks never started do not hold up the teardown") {
  SupervisorMachine m(policy(4));
  m.on(input::Start{});
  auto a = m.on(input::SignalReceived{SIGTERM});
  CHECK(get<action::SignalGroup>(a).signo == SIGTERM);
  CHECK(m.on(input::SpawnAbandoned{0, 2}).empty());  // ranks 0 and 1 run
  CHECK(m.on(exited(0, 0, SIGTERM)).empty());
  auto done = m.on(exited(1, 0, SIGTERM));
  CHECK(get<action::Finish>(done).exit_code == 128 + SIGTERM);
  CHECK(m.state() == GroupState::Interrupted);
}

TEST_CASE("a spawn cut short before any rank started finishes at once") {
  SupervisorMachine m(policy(3, 2));
  m.on(input::Start{});
  m.on(input::SignalReceived{SIGINT});
  auto done = m.on(input::SpawnAbandoned{0, 0});
  CHECK(get<action::Finish>(done).exit_code == 128 + SIGINT);
}

TEST_CASE("a failure during a spawn cut short restarts once the started ranks are gone") {
  SupervisorMachine m(policy(3, 1));
  m.on(input::Start{});
  auto a = m.on(exited(0, 1));
  CHECK(get<action::SignalGroup>(a).signo == SIGTERM);
  auto r = m.on(input::SpawnAbandoned{0, 1});  // only rank 0 had started, and it is gone
  CHECK(get<action::ArmBackoff>(r).attempt == 1);
  CHECK(m.on(input::SpawnAbandoned{5, 0}).empty());  // another attempt's: ignored
}

TEST_CASE("finishing: the last output drains, then the supervisor exits once") {
  SupervisorMachine m(policy(1));
  m.on(input::Start{});
  CHECK(m.finish_stage() == FinishStage::NotFinishing);
  CHECK(get<action::Finish>(m.on(exited(0, 0))).exit_code == 0);
  CHECK(m.finish_stage() == FinishStage::Draining);
  CHECK(m.on(exited(0, 0)).empty());                // a late reap changes nothing
  CHECK(m.on(input::ExitBarrierPassed{}).empty());  // no barrier without a dynamic rendezvous
  CHECK(get<action::Exit>(m.on(input::OutputDrained{})).exit_code == 0);
  CHECK(m.finish_stage() == FinishStage::Exited);
  CHECK(m.on(input::OutputDrained{}).empty());  // the drain timer's cancellation fires it again
  CHECK(m.on(input::SignalReceived{SIGINT}).empty());
  CHECK(m.finished_with() == 0);
}

TEST_CASE("finishing with a dynamic rendezvous: the exit barrier comes between the drain and the exit") {
  auto p = policy(1);
  p.exit_barrier = true;
  SupervisorMachine m(p);
  m.on(input::Start{});
  m.on(exited(0, 2));
  CHECK(m.finish_stage() == FinishStage::Draining);
  CHECK(get<action::JoinExitBarrier>(m.on(input::OutputDrained{})).exit_code == 1);
  CHECK(m.finish_stage() == FinishStage::AtExitBarrier);
  CHECK(m.on(input::OutputDrained{}).empty());  // joined once
  CHECK(get<action::Exit>(m.on(input::ExitBarrierPassed{})).exit_code == 1);
  CHECK(m.finish_stage() == FinishStage::Exited);
}

TEST_CASE("finishing: a handled signal stops the waiting, at the barrier or during the drain: 128+signo") {
  auto p = policy(1);
  p.exit_barrier = true;
  SupervisorMachine m(p);
  m.on(input::Start{});
  m.on(exited(0, 0));
  m.on(input::OutputDrained{});
  CHECK(get<action::Exit>(m.on(input::SignalReceived{SIGTERM})).exit_code == 128 + SIGTERM);
  CHECK(m.finished_with() == 128 + SIGTERM);
  CHECK(m.state() == GroupState::Succeeded);        // the group's outcome stays what it was
  CHECK(m.on(input::ExitBarrierPassed{}).empty());  // the barrier's late answer: already gone

  SupervisorMachine d(policy(1));
  d.on(input::Start{});
  d.on(exited(0, 0));
  CHECK(get<action::Exit>(d.on(input::SignalReceived{SIGINT})).exit_code == 128 + SIGINT);
  CHECK(d.on(input::OutputDrained{}).empty());
}

TEST_CASE("the policy from the config: static runs restart by the budget; a dynamic rendezvous rejoins") {
  SupervisorConfig c;
  c.plan.nproc_per_node = 3;
  c.max_restarts = 2;
  c.shutdown_grace = 7000ms;
  c.restart_backoff = 250ms;
  auto p = supervisor_policy(c);
  CHECK(p.nproc == 3);
  CHECK(p.max_restarts == 2);
  CHECK(p.shutdown_grace == 7000ms);
  CHECK(p.restart_backoff == 250ms);
  CHECK(p.max_backoff == 10000ms);
  CHECK_FALSE(p.rendezvous_budget);
  CHECK_FALSE(p.exit_barrier);
  c.dynamic = RendezvousConfig{};
  auto d = supervisor_policy(c);
  CHECK(d.rendezvous_budget);
  CHECK(d.exit_barrier);
}

TEST_CASE("a crash loop without progress ends after --max-no-progress-restarts with its exit code") {
  auto p = policy(1, 10);
  p.max_no_progress_restarts = 2;
  p.checkpoint_file = true;  // evidence: a checkpoint file that never advances
  SupervisorMachine m(p);
  m.on(input::Start{});
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto a = m.on(exited(0, 1));
    CHECK(get<action::ArmBackoff>(a).attempt == attempt + 1);
    CHECK(m.restart_decision()->no_progress_in_a_row == attempt + 1);
    m.on(input::BackoffExpired{attempt + 1});
  }
  auto done = m.on(exited(0, 1));
  CHECK(get<action::Finish>(done).exit_code == kNoProgressExitCode);
  CHECK(m.restart_decision()->verdict == RestartVerdict::NoProgress);
  CHECK(m.state() == GroupState::Failed);
}

TEST_CASE("an attempt that passed the last one's step restarts past --max-no-progress-restarts") {
  auto p = policy(1, 10);
  p.max_no_progress_restarts = 1;
  SupervisorMachine m(p);
  m.on(input::Start{});
  for (int attempt = 0; attempt < 5; ++attempt) {
    m.on(input::ProgressSeen{attempt, {.checkpoint = std::nullopt, .step = 10.0 * (attempt + 1)}});
    m.on(input::ProgressSeen{attempt + 7, {.checkpoint = std::nullopt, .step = 1e9}});  // another attempt's: ignored
    auto a = m.on(exited(0, 1));
    REQUIRE(has<action::ArmBackoff>(a));
    CHECK(m.restart_decision()->progressed);
    m.on(input::BackoffExpired{attempt + 1});
  }
  CHECK(m.restarts_left() == 5);
}

TEST_CASE("dynamic rendezvous: the failed attempt's progress is kept for the join that reports it") {
  auto p = policy(1, 10);
  p.max_no_progress_restarts = 0;
  p.checkpoint_file = true;
  p.rendezvous_budget = true;
  SupervisorMachine m(p);
  m.on(input::Start{});
  m.on(input::ProgressSeen{0, {.checkpoint = 120, .step = std::nullopt}});
  // No progress limit here (0 would end a static run at once): the host weighs the job's progress.
  CHECK(has<action::ArmBackoff>(m.on(exited(0, 1))));
  CHECK(m.own_failure());
  CHECK(m.progress().checkpoint == 120);
  CHECK_FALSE(m.restart_decision());
}
