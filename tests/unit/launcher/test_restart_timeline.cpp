#include <doctest/doctest.h>

#include "launcher/supervisor/restart_timeline.hpp"

using namespace ddp::launcher;
using P = RestartPhase;

TEST_CASE("a restart's phases in order: the summary names each share and the total") {
  RestartTimeline t;
  CHECK_FALSE(t.note(P::GroupStopped, 1.0));  // nothing under way
  t.begin(0, 100.0);
  CHECK(t.note(P::GroupStopped, 100.02));
  CHECK(t.note(P::SpawnBegan, 100.02));
  CHECK(t.note(P::Spawned, 100.03));
  CHECK(t.note(P::InterpreterReady, 100.08));
  CHECK(t.note(P::StoreReached, 100.13));
  CHECK_FALSE(t.note(P::InterpreterReady, 100.5));  // the first time stays
  CHECK(t.note(P::FirstProgress, 100.42));
  CHECK(t.summary() ==
        "back to training in 0.42 s: stop 0.02, wait 0.00, spawn 0.01, interpreter 0.05, rendezvous 0.05, first step "
        "0.29");
  auto e = t.finish();
  CHECK(e.attempt == 1);
  CHECK(e.failed_attempt == 0);
  CHECK(e.back_in_s.has_value());
  CHECK(*e.back_in_s == doctest::Approx(0.42));
  CHECK_FALSE(e.gpu_released.has_value());
  CHECK(*e.spawned == doctest::Approx(100.03));
  CHECK_FALSE(t.active());
  CHECK_FALSE(t.note(P::FirstProgress, 101.0));
}

TEST_CASE("a phase before the one it follows is ignored; a time before an earlier phase is moved up to it") {
  RestartTimeline t;
  t.begin(2, 10.0);
  CHECK_FALSE(t.note(P::Spawned, 10.5));        // spawning never began
  CHECK_FALSE(t.note(P::FirstProgress, 10.6));  // nor was anything spawned
  CHECK(t.note(P::GroupStopped, 9.9));          // another clock's read of the same instant
  CHECK(*t.at(P::GroupStopped) == 10.0);
  CHECK(t.note(P::GpuReleased, 10.3));
  CHECK(t.note(P::SpawnBegan, 10.4));
  CHECK(t.note(P::Spawned, 10.45));
  CHECK_FALSE(t.back_in());
  CHECK(t.summary() == "no progress yet after 0.45 s: stop 0.00, gpu memory 0.30, wait 0.10, spawn 0.05");
  auto e = t.finish();
  CHECK(e.attempt == 3);
  CHECK_FALSE(e.first_progress);
  CHECK(*e.gpu_released == doctest::Approx(10.3));
}

TEST_CASE("without the optional phases the first step follows the spawn") {
  RestartTimeline t;
  t.begin(0, 1.0);
  t.note(P::GroupStopped, 1.1);
  t.note(P::SpawnBegan, 1.2);
  t.note(P::Spawned, 1.3);
  CHECK(t.note(P::FirstProgress, 2.0));
  CHECK(t.summary() == "back to training in 1.00 s: stop 0.10, wait 0.10, spawn 0.10, first step 0.70");
}
