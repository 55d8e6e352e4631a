#include <doctest/doctest.h>

#include <set>

#include "jobs/job_state.hpp"
#include "jobs/scheduler.hpp"

using namespace ddp::jobs;

TEST_CASE("three one-slot jobs on two slots: the third waits, then runs when one finishes") {
  Scheduler s({2, {}});
  s.enqueue(1, 0, 1, {1, 0});
  s.enqueue(2, 0, 2, {1, 0});
  s.enqueue(3, 0, 3, {1, 0});
  auto started = s.schedule();
  REQUIRE(started.size() == 2);
  CHECK(started[0].id == 1);
  CHECK(started[1].id == 2);
  CHECK(s.queue_length() == 1);
  CHECK(s.pending_reason(3)->find("waiting for resources") != std::string::npos);
  CHECK(s.schedule().empty());
  s.release(1);
  started = s.schedule();
  REQUIRE(started.size() == 1);
  CHECK(started[0].id == 3);
  CHECK(s.slots_in_use() == 2);
}

TEST_CASE("higher priority first, FIFO among equals") {
  Scheduler s({1, {}});
  s.enqueue(1, 0, 1, {1, 0});
  s.enqueue(2, 5, 2, {1, 0});
  s.enqueue(3, 5, 3, {1, 0});
  s.enqueue(4, -1, 4, {1, 0});
  std::vector<JobId> order;
  for (int i = 0; i < 4; ++i) {
    auto p = s.schedule();
    REQUIRE(p.size() == 1);
    order.push_back(p[0].id);
    s.release(p[0].id);
  }
  CHECK(order == std::vector<JobId>{2, 3, 1, 4});
}

TEST_CASE("two GPUs are never double-booked; each job gets its own indices") {
  Scheduler s({8, {0, 1}});
  s.enqueue(1, 0, 1, {1, 1});
  s.enqueue(2, 0, 2, {1, 1});
  s.enqueue(3, 0, 3, {1, 1});
  auto p = s.schedule();
  REQUIRE(p.size() == 2);
  CHECK(p[0].gpus == std::vector<int>{0});
  CHECK(p[1].gpus == std::vector<int>{1});
  CHECK(s.gpus_in_use() == 2);
  CHECK(*s.gpu_owner(0) == 1);
  s.release(2);
  p = s.schedule();
  REQUIRE(p.size() == 1);
  CHECK(p[0].id == 3);
  CHECK(p[0].gpus == std::vector<int>{1});
}

TEST_CASE("strict gang rule: a big job at the head holds back smaller ones behind it") {
  Scheduler s({4, {0, 1}});
  s.enqueue(1, 0, 1, {1, 1});
  CHECK(s.schedule().size() == 1);
  s.enqueue(2, 0, 2, {1, 2});  // needs both GPUs
  s.enqueue(3, 0, 3, {1, 1});  // would fit, but must not overtake job 2
  CHECK(s.schedule().empty());
  CHECK(s.pending_reason(3)->find("behind job 2") != std::string::npos);
  s.release(1);
  auto p = s.schedule();
  REQUIRE(p.size() == 1);
  CHECK(p[0].id == 2);
  CHECK(p[0].gpus == std::vector<int>{0, 1});
}

TEST_CASE("requests larger than the host never fit; hold refuses taken resources") {
  Scheduler s({2, {0}});
  CHECK(s.never_fits({3, 0})->find("3 CPU slots") != std::string::npos);
  CHECK(s.never_fits({1, 2})->find("2 GPUs") != std::string::npos);
  CHECK_FALSE(s.never_fits({2, 1}));
  CHECK(s.hold({7, 1, {0}}));
  CHECK_FALSE(s.hold({8, 1, {0}}));
  CHECK_FALSE(s.hold({9, 1, {5}}));  // no such GPU
  CHECK(s.dequeue(1) == false);
}

TEST_CASE("job states: names, terminal states, legal transitions only") {
  CHECK(state_name(JobState::Cancelling) == "CANCELLING");
  CHECK(*parse_state("running") == JobState::Running);
  CHECK_FALSE(parse_state("LOST"));
  CHECK(is_terminal(JobState::Cancelled));
  CHECK_FALSE(is_terminal(JobState::Restarting));
  CHECK(can_transition(JobState::Pending, JobState::Starting));
  CHECK(can_transition(JobState::Pending, JobState::Cancelled));
  CHECK_FALSE(can_transition(JobState::Pending, JobState::Running));
  CHECK_FALSE(can_transition(JobState::Succeeded, JobState::Running));
  CHECK_FALSE(can_transition(JobState::Cancelled, JobState::Pending));
  CHECK(can_transition(JobState::Cancelling, JobState::Succeeded));
  CHECK_FALSE(can_transition(JobState::Cancelling, JobState::Running));
  CHECK(can_transition(JobState::Restarting, JobState::Starting));
}

TEST_CASE("supervisor events move the job: ranks up → RUNNING, group restart → RESTARTING") {
  namespace ev = ddp::events;
  const ev::Payload rank_started = ev::RankStarted{0, 0, 0, 1};
  CHECK(*state_after_supervisor_event(JobState::Starting, rank_started) == JobState::Running);
  CHECK(*state_after_supervisor_event(JobState::Starting, ev::RendezvousComplete{0, {}, {}, 2, 1}) ==
        JobState::Running);
  CHECK_FALSE(state_after_supervisor_event(JobState::Running, rank_started));
  CHECK(*state_after_supervisor_event(JobState::Running, ev::Restarting{1, 0}) == JobState::Restarting);
  CHECK(*state_after_supervisor_event(JobState::Restarting, rank_started) == JobState::Running);
  CHECK_FALSE(state_after_supervisor_event(JobState::Cancelling, rank_started));
  CHECK_FALSE(state_after_supervisor_event(JobState::Running, ev::Finished{0, "SUCCEEDED", 1, 0}));
  CHECK_FALSE(state_after_supervisor_event(JobState::Starting, ev::Unknown{"rank_started_v2", {}}));
}
