#include <doctest/doctest.h>

#include "jobs/dashboard/live_plan.hpp"

using namespace ddp::jobs::dashboard;
using namespace std::chrono_literals;

namespace {
const TimePoint t0{std::chrono::hours(1)};
const LiveTimings timings{100ms, 1000ms, 15000ms};
}  // namespace

TEST_CASE("a burst of changes becomes one message, coalesce after the first") {
  LivePlan plan(timings, t0);
  plan.mark(Topic::Log, t0);
  plan.mark(Topic::Log, t0 + 30ms);
  plan.mark(Topic::Job, t0 + 60ms);
  CHECK(plan.next_due() == t0 + 100ms);
  CHECK(plan.take(t0 + 50ms).empty());  // not due yet
  auto b = plan.take(t0 + 100ms);
  CHECK(b.has(Topic::Log));
  CHECK_FALSE(b.has(Topic::Job));  // marked at 60 ms: due at 160 ms
  CHECK(plan.next_due() == t0 + 160ms);
  CHECK(plan.take(t0 + 160ms).has(Topic::Job));
  CHECK_FALSE(plan.pending(Topic::Job));
}

TEST_CASE("a backlog is due at once") {
  LivePlan plan(timings, t0);
  plan.backlog(Topic::Log, t0);
  CHECK(plan.next_due() == t0);
  CHECK(plan.take(t0).has(Topic::Log));
  plan.mark(Topic::Log, t0 + 1ms);  // after a backlog was taken, the next change coalesces again
  CHECK(plan.next_due() == t0 + 101ms);
}

TEST_CASE("the chart at most once per metrics_every") {
  LivePlan plan(timings, t0);
  plan.backlog(Topic::Metrics, t0);
  CHECK(plan.take(t0).has(Topic::Metrics));
  plan.mark(Topic::Metrics, t0 + 10ms);
  CHECK(plan.next_due() == t0 + 1000ms);
  CHECK(plan.take(t0 + 500ms).empty());
  CHECK(plan.take(t0 + 1000ms).has(Topic::Metrics));
  plan.backlog(Topic::Metrics, t0 + 1001ms);  // not even a backlog skips the interval
  CHECK(plan.next_due() == t0 + 2000ms);
}

TEST_CASE("a quiet stream gets a heartbeat, then waits again") {
  LivePlan plan(timings, t0);
  CHECK(plan.next_due() == t0 + 15s);
  CHECK(plan.take(t0 + 14s).empty());
  auto b = plan.take(t0 + 15s);
  CHECK(b.heartbeat);
  CHECK(plan.next_due() == t0 + 30s);
  plan.mark(Topic::Host, t0 + 20s);
  CHECK(plan.take(t0 + 20s + 100ms).has(Topic::Host));  // a message resets the heartbeat's clock
  CHECK(plan.next_due() == t0 + 35s + 100ms);
}
