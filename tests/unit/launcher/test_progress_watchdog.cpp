// The progress watchdog's judgment on a simulated clock: fixed and learned (auto) timeouts, the
// rank that went silent first named as the suspect, the earliest deadline as the next check.
#include <doctest/doctest.h>

#include "common/error.hpp"
#include "launcher/hang/progress_watchdog.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;

namespace {

const ProgressTime t0 = ProgressTime{} + 1000s;

HangTimeout fixed(std::chrono::milliseconds t) { return {HangTimeout::Mode::Fixed, t}; }

ProgressWatchdog::NotDue not_due(ProgressWatchdog& w, ProgressTime now) {
  auto r = w.check(now);
  REQUIRE(std::holds_alternative<ProgressWatchdog::NotDue>(r));
  return std::get<ProgressWatchdog::NotDue>(r);
}

HangVerdict hung(ProgressWatchdog& w, ProgressTime now) {
  auto r = w.check(now);
  REQUIRE(std::holds_alternative<ProgressWatchdog::Hung>(r));
  return std::get<ProgressWatchdog::Hung>(r).verdict;
}

// A rank that prints every `period` from `from` for `n` lines.
void steps(ProgressWatchdog& w, int local, ProgressTime from, std::chrono::milliseconds period, int n) {
  for (int i = 0; i < n; ++i) w.on_progress(local, from + period * i);
}

}  // namespace

TEST_CASE("--hang-timeout parses auto, off and durations; anything else names the flag and the forms") {
  CHECK(parse_hang_timeout("auto").mode == HangTimeout::Mode::Auto);
  CHECK(parse_hang_timeout("off").mode == HangTimeout::Mode::Off);
  CHECK(parse_hang_timeout("5") == fixed(5000ms));
  CHECK(parse_hang_timeout("2m") == fixed(120000ms));
  CHECK(parse_hang_timeout("250ms") == fixed(250ms));
  for (const char* bad : {"0", "-3", "soon", "", "nan"}) {
    CAPTURE(bad);
    try {
      parse_hang_timeout(bad);
      FAIL("accepted");
    } catch (const ddp::UsageError& e) {
      std::string what = e.what();
      CHECK(what.find("--hang-timeout") != std::string::npos);
      CHECK(what.find("auto") != std::string::npos);
      CHECK(what.find("off") != std::string::npos);
    }
  }
  CHECK(describe_hang_timeout(fixed(5000ms)) == "5s");
  CHECK(describe_hang_timeout(parse_hang_timeout("auto")) == "auto");
}

TEST_CASE("fixed: the clock starts at the spawn; the first deadline is the next check; progress moves it") {
  ProgressWatchdog w(fixed(5000ms));
  w.begin(0, {0, 1}, t0);
  CHECK(not_due(w, t0).next == t0 + 5s);
  // Progress records a time and asks for no re-arm: deadlines only move later.
  CHECK_FALSE(w.on_progress(0, t0 + 1s));
  CHECK_FALSE(w.on_progress(1, t0 + 2s));
  CHECK(not_due(w, t0 + 5s).next == t0 + 6s);  // the timer fired early: look again at rank 0's
  auto v = hung(w, t0 + 6s);
  CHECK(v.suspect().rank == 0);
  CHECK(v.suspect().silent_s == doctest::Approx(5.0));
  CHECK(v.timeout_s == doctest::Approx(5.0));
  CHECK(v.setting == "5s");
}

TEST_CASE("DDP's reality: the rank that went silent first is the suspect, the others waited") {
  ProgressWatchdog w(fixed(5000ms));
  w.begin(3, {4, 5, 6, 7}, t0);
  // Steps every 200 ms; global rank 5 (local 1) stops after its step at 1.0 s, the others print
  // their next step at 1.2 s and block in the collective that rank 5 never joins.
  for (int local : {0, 1, 2, 3}) steps(w, local, t0, 200ms, 6);
  for (int local : {0, 2, 3}) w.on_progress(local, t0 + 1200ms);
  CHECK(not_due(w, t0 + 5s).next == t0 + 6s);
  auto v = hung(w, t0 + 6s);
  CHECK(v.attempt == 3);
  REQUIRE(v.silent.size() == 4);
  CHECK(v.suspect().rank == 5);
  CHECK(v.suspect().local_rank == 1);
  CHECK(v.silent[1].silent_s == doctest::Approx(4.8));
  CHECK(v.first_by_s == doctest::Approx(0.2));
  CHECK(v.suspect_is_clear());
  CHECK(v.progressing.empty());
  auto text = hang_report(v);
  CHECK(text.find("rank 5 (local 1) made no progress for 5.0 s (--hang-timeout 5s) and went silent first") == 0);
  CHECK(text.find("rank 4 (local 0) waited: silent for 4.8 s, 0.2 s after rank 5") != std::string::npos);
}

TEST_CASE("ranks that went silent together (their last lines right after a collective): no clear suspect") {
  ProgressWatchdog w(fixed(5000ms));
  w.begin(0, {0, 1}, t0);
  w.on_progress(0, t0 + 1000ms);
  w.on_progress(1, t0 + 1010ms);
  auto v = hung(w, t0 + 6s);
  CHECK(v.suspect().rank == 0);
  REQUIRE(v.first_by_s);
  CHECK(*v.first_by_s == doctest::Approx(0.01));
  CHECK_FALSE(v.suspect_is_clear());
  auto text = hang_report(v);
  CHECK(text.find("ranks 0, 1 made no progress for 5.0 s (--hang-timeout 5s) and went silent together") == 0);
  CHECK(text.find("cannot tell which one hangs") != std::string::npos);
  CHECK(text.find("waited") == std::string::npos);
}

TEST_CASE("a job with ranks on other nodes: the report says they are judged elsewhere") {
  ProgressWatchdog w(fixed(1000ms));
  w.begin(0, {2, 3}, t0, 4);
  auto v = hung(w, t0 + 1s);
  CHECK(v.other_nodes);
  CHECK(hang_report(v).find("ranks of other nodes are judged by their own supervisors") != std::string::npos);
  ProgressWatchdog one(fixed(1000ms));
  one.begin(0, {0, 1}, t0, 2);
  CHECK_FALSE(hung(one, t0 + 1s).other_nodes);
}

TEST_CASE("a rank still heard from is progressing, not waiting") {
  ProgressWatchdog w(fixed(4000ms));
  w.begin(0, {0, 1, 2}, t0);
  w.on_progress(0, t0 + 1s);
  w.on_progress(1, t0 + 2500ms);  // silent 2.5 s at the verdict: at least half the timeout
  w.on_progress(2, t0 + 4500ms);  // silent 0.5 s
  auto v = hung(w, t0 + 5s);
  CHECK(v.suspect().rank == 0);
  REQUIRE(v.silent.size() == 2);
  CHECK(v.silent[1].rank == 1);
  CHECK(v.progressing == std::vector<int>{2});
  CHECK(hang_report(v).find("still progressing: rank(s) 2") != std::string::npos);
}

TEST_CASE("an exited rank is no longer watched; stop() watches nothing; off never fires") {
  ProgressWatchdog w(fixed(1000ms));
  w.begin(0, {0, 1}, t0);
  w.forget(0);
  w.on_progress(1, t0 + 500ms);
  CHECK(not_due(w, t0 + 1s).next == t0 + 1500ms);
  w.stop();
  CHECK_FALSE(not_due(w, t0 + 1h).next);

  ProgressWatchdog off(parse_hang_timeout("off"));
  off.begin(0, {0}, t0);
  auto nd = not_due(off, t0 + 24h);
  CHECK_FALSE(nd.next);
  CHECK_FALSE(nd.notice);
}

TEST_CASE("auto: unwatched through the warm-up, then max(floor, 5 x the longest interval); it only grows") {
  ProgressWatchdog w(parse_hang_timeout("auto"));
  w.begin(0, {0}, t0);
  // Startup is not learned: the first kWarmupEvents events only warm up.
  CHECK_FALSE(w.on_progress(0, t0 + 30s));  // imports, rendezvous
  CHECK_FALSE(w.on_progress(0, t0 + 31s));
  CHECK_FALSE(w.on_progress(0, t0 + 32s));
  CHECK_FALSE(w.timeout_of(0));
  // The first learned interval makes the rank watched: the driver must re-arm its timer.
  CHECK(w.on_progress(0, t0 + 33s));
  CHECK(w.timeout_of(0) == kAutoFloor);  // 5 x 1 s is under the floor
  CHECK(not_due(w, t0 + 34s).next == t0 + 33s + kAutoFloor);
  // A slow step (20 s) raises it to 100 s; a fast one later does not lower it.
  w.on_progress(0, t0 + 53s);
  CHECK(w.timeout_of(0) == 100000ms);
  w.on_progress(0, t0 + 54s);
  CHECK(w.timeout_of(0) == 100000ms);
  CHECK(not_due(w, t0 + 153s).next == t0 + 154s);
  auto v = hung(w, t0 + 154s);
  CHECK(v.setting == "auto");
  CHECK(v.timeout_s == doctest::Approx(100.0));
  CHECK(hang_report(v).find("(--hang-timeout auto: 100.0 s learned)") != std::string::npos);
}

TEST_CASE("auto: a quiet but alive phase of 30 s after fast steps is not a hang") {
  ProgressWatchdog w(parse_hang_timeout("auto"));
  w.begin(0, {0, 1}, t0);
  for (int local : {0, 1}) steps(w, local, t0 + 5s, 100ms, 20);  // 0.1 s steps, then 30 s of silence
  const auto quiet_from = t0 + 5s + 1900ms;
  CHECK(not_due(w, quiet_from + 30s).next == quiet_from + kAutoFloor);
  for (int local : {0, 1}) w.on_progress(local, quiet_from + 30s);  // it prints again
  // ... and that quiet phase was learned: the next one may last 5 x 30 s.
  CHECK(w.timeout_of(0) == 150000ms);
  CHECK(not_due(w, quiet_from + 31s).next == quiet_from + 30s + 150s);
}

TEST_CASE("auto: a burst of lines is one event (no warm-up, no learning from it)") {
  ProgressWatchdog w(parse_hang_timeout("auto"));
  w.begin(0, {0}, t0);
  for (int i = 0; i < 40; ++i) w.on_progress(0, t0 + 1s + std::chrono::milliseconds(i));  // a traceback, a banner
  CHECK_FALSE(w.timeout_of(0));
}

TEST_CASE(
    "auto: a rank without a progress signal stays unwatched, is listed as such, and no rank at all is said once") {
  ProgressWatchdog w(parse_hang_timeout("auto"));
  w.begin(0, {0, 1}, t0);
  // Nothing from anyone: look again when the floor has passed, then say so once.
  auto first = not_due(w, t0 + 1s);
  CHECK(first.next == t0 + kAutoFloor);
  CHECK_FALSE(first.notice);
  auto said = not_due(w, t0 + kAutoFloor);
  REQUIRE(said.notice);
  CHECK(said.notice->find("--hang-timeout SECONDS") != std::string::npos);
  CHECK_FALSE(said.next);
  CHECK_FALSE(not_due(w, t0 + 2 * kAutoFloor).notice);
  // Rank 0 prints; rank 1 never does (only rank 0 logs): rank 1 is named as unjudged.
  steps(w, 0, t0 + 70s, 1s, 5);
  auto v = hung(w, t0 + 74s + kAutoFloor);
  CHECK(v.suspect().rank == 0);
  CHECK(v.unwatched == std::vector<int>{1});
  CHECK(hang_report(v).find("no progress signal from rank(s) 1") != std::string::npos);
}

TEST_CASE("begin forgets the last attempt: fresh clocks, a fresh warm-up") {
  ProgressWatchdog w(parse_hang_timeout("auto"));
  w.begin(0, {0}, t0);
  steps(w, 0, t0, 1s, 6);
  REQUIRE(w.timeout_of(0));
  w.begin(1, {0}, t0 + 100s);
  CHECK_FALSE(w.timeout_of(0));
  ProgressWatchdog f(fixed(2000ms));
  f.begin(0, {0}, t0);
  f.begin(1, {0}, t0 + 10s);
  CHECK(not_due(f, t0 + 11s).next == t0 + 12s);
  CHECK(hung(f, t0 + 12s).attempt == 1);
}
