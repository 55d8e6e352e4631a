#include <doctest/doctest.h>

#include "launcher/rendezvous/restart_budget.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;

namespace {
RestartBudgetPolicy policy(int max_restarts, int max_no_progress = 3, BudgetMode mode = BudgetMode::Count,
                           bool checkpoint = false) {
  return {.max_restarts = max_restarts,
          .max_no_progress_restarts = max_no_progress,
          .mode = mode,
          .checkpoint_file = checkpoint};
}
ProgressMark step(double s) { return {.checkpoint = std::nullopt, .step = s}; }
ProgressMark checkpoint(std::int64_t c) { return {.checkpoint = c, .step = std::nullopt}; }
}  // namespace

TEST_CASE("a crash loop without progress ends after N restarts with its own exit code") {
  RestartBudget b(policy(10, 3));
  CHECK(b.on_failure(step(5)).progressed);  // the first attempt printed a step: progress is measurable
  for (int i = 1; i <= 3; ++i) {
    auto d = b.on_failure({});
    CHECK(d.verdict == RestartVerdict::Restart);
    CHECK_FALSE(d.progressed);
    CHECK(d.no_progress_in_a_row == i);
    CHECK(d.restarts_left == 9 - i);
  }
  auto d = b.on_failure({});
  CHECK(d.verdict == RestartVerdict::NoProgress);
  CHECK(d.exit_code() == kNoProgressExitCode);
  CHECK(d.restarts_left == 6);
  CHECK(d.text(policy(10, 3)).find("--max-no-progress-restarts 3") != std::string::npos);
}

TEST_CASE("no evidence either way (no checkpoint file, no step ever): restarted up to --max-restarts, as torchrun") {
  RestartBudget b(policy(5, 3));
  for (int i = 0; i < 5; ++i) {
    auto d = b.on_failure({});
    CHECK(d.verdict == RestartVerdict::Restart);
    CHECK(d.no_progress_in_a_row == 0);
  }
  CHECK(b.on_failure({}).verdict == RestartVerdict::BudgetSpent);
}

TEST_CASE("--max-restarts is spent first: exit 1 as before, even in a loop without progress") {
  RestartBudget b(policy(3, 3));
  for (int i = 0; i < 3; ++i) CHECK(b.on_failure(step(1)).verdict == RestartVerdict::Restart);
  auto d = b.on_failure({});
  CHECK(d.verdict == RestartVerdict::BudgetSpent);
  CHECK(d.exit_code() == 1);
  RestartBudget none(policy(0));
  CHECK(none.on_failure(step(100)).verdict == RestartVerdict::BudgetSpent);
}

TEST_CASE("steps: progress is a step past every earlier attempt's; it resets the no-progress count") {
  RestartBudget b(policy(100, 1));
  CHECK(b.on_failure(step(50)).progressed);
  auto again = b.on_failure(step(50));  // restarted from scratch, died at the same step
  CHECK_FALSE(again.progressed);
  CHECK(again.verdict == RestartVerdict::Restart);
  CHECK(b.on_failure(step(51)).progressed);
  CHECK(b.on_failure(step(10)).no_progress_in_a_row == 1);
  CHECK(b.on_failure({}).verdict == RestartVerdict::NoProgress);
}

TEST_CASE("checkpoint file: only the iteration advancing is progress; steps are ignored") {
  RestartBudget b(policy(100, 2, BudgetMode::Count, true), 100);
  CHECK_FALSE(b.on_failure(checkpoint(100)).progressed);  // the iteration it started from
  CHECK(b.on_failure(checkpoint(200)).progressed);
  CHECK_FALSE(b.on_failure({.checkpoint = 200, .step = 5000}).progressed);
  CHECK_FALSE(b.on_failure({}).progressed);  // the file went away
  auto d = b.on_failure(checkpoint(150));    // went back: not progress
  CHECK(d.verdict == RestartVerdict::NoProgress);
  CHECK(d.text(b.policy()).find("the checkpoint file reads 150") != std::string::npos);
  RestartBudget fresh(policy(5, 3, BudgetMode::Count, true));
  CHECK(fresh.on_failure(checkpoint(0)).progressed);  // any iteration passes a missing file
}

TEST_CASE("--restart-budget progress: restarts after progress are free") {
  RestartBudget b(policy(1, 3, BudgetMode::Progress, true));
  for (std::int64_t it = 1; it <= 5; ++it) {
    auto d = b.on_failure(checkpoint(it * 10));
    CHECK(d.verdict == RestartVerdict::Restart);
    CHECK_FALSE(d.charged);
    CHECK(d.restarts_left == 1);
  }
  auto charged = b.on_failure(checkpoint(50));
  CHECK(charged.verdict == RestartVerdict::Restart);
  CHECK(charged.charged);
  CHECK(charged.restarts_left == 0);
  CHECK(b.on_failure(checkpoint(50)).verdict == RestartVerdict::BudgetSpent);
  // count mode charges every restart
  RestartBudget count(policy(1, 3, BudgetMode::Count, true));
  CHECK(count.on_failure(checkpoint(10)).charged);
  CHECK(count.on_failure(checkpoint(20)).verdict == RestartVerdict::BudgetSpent);
}

TEST_CASE("--max-no-progress-restarts 0: every restart needs progress") {
  RestartBudget b(policy(5, 0));
  CHECK(b.on_failure(step(1)).verdict == RestartVerdict::Restart);  // progress: the first step
  CHECK(b.on_failure(step(1)).verdict == RestartVerdict::NoProgress);
}

TEST_CASE("restart_delay: the back-off, or what is left of the minimum interval") {
  CHECK(restart_delay(0ms, 0ms, 5ms) == 0ms);
  CHECK(restart_delay(100ms, 0ms, 5ms) == 100ms);
  CHECK(restart_delay(0ms, 2000ms, 500ms) == 1500ms);
  CHECK(restart_delay(1800ms, 2000ms, 500ms) == 1800ms);
  CHECK(restart_delay(0ms, 2000ms, 3000ms) == 0ms);
}

TEST_CASE("parse_checkpoint_iteration: one integer, whitespace around it") {
  CHECK(parse_checkpoint_iteration("120\n") == 120);
  CHECK(parse_checkpoint_iteration("  -1 ") == -1);
  CHECK_FALSE(parse_checkpoint_iteration(""));
  CHECK_FALSE(parse_checkpoint_iteration("12 13"));
  CHECK_FALSE(parse_checkpoint_iteration("iter=5"));
  CHECK_FALSE(parse_checkpoint_iteration("99999999999999999999999"));
}

TEST_CASE("raise_baseline: an attempt must pass the best checkpoint any node started from") {
  RestartBudget b(policy(10, 3, BudgetMode::Count, true), 50);
  b.raise_baseline(100);
  b.raise_baseline(70);            // lower: the best stays
  b.raise_baseline(std::nullopt);  // no file on that node
  CHECK_FALSE(b.on_failure(checkpoint(100)).progressed);
  CHECK(b.on_failure(checkpoint(101)).progressed);
}

TEST_CASE("restart verdict names: the finished event's gave_up words, both ways") {
  for (auto v : {RestartVerdict::Restart, RestartVerdict::BudgetSpent, RestartVerdict::NoProgress}) {
    CHECK(restart_verdict_named(restart_verdict_name(v)) == v);
  }
  CHECK(restart_verdict_name(RestartVerdict::BudgetSpent) == "max_restarts");
  CHECK(restart_verdict_name(RestartVerdict::NoProgress) == "no_progress");
  CHECK_FALSE(restart_verdict_named("later"));
}
