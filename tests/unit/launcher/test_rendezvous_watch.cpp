// The rendezvous watchdog's driver on a real io_context with short timeouts: it judges once the
// timeout passed, looks again on NoEvidence, stops once the count says complete, and forgets an
// attempt when the next one begins.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <optional>
#include <vector>

#include "launcher/rendezvous/rendezvous_watch.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;

namespace {

struct Fixture {
  boost::asio::io_context io;
  RendezvousEvidence ev;
  int world = 2;
  int gathered = 0;  // times the watch asked for evidence
  std::vector<int> timed_out;
  RendezvousWatch watch{io,
                        20ms,
                        1,
                        {.world_size = [this] { return world; },
                         .evidence =
                             [this] {
                               ++gathered;
                               return ev;
                             },
                         .timed_out =
                             [this](int attempt, int w, const RendezvousEvidence&, const RendezvousJudgment& j) {
                               CHECK(w == world);
                               CHECK(j.verdict == RendezvousJudgment::Verdict::TimedOut);
                               timed_out.push_back(attempt);
                             }}};

  // Runs the loop until it has nothing left to do; a watch that never stops fails the test.
  void run_to_end() {
    io.restart();
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!io.stopped() && std::chrono::steady_clock::now() < deadline) io.run_one_for(100ms);
    REQUIRE_MESSAGE(io.stopped(), "the watch still had a timer armed after 5 s");
  }
};

WatchedRank rank(int r, bool reached) { return WatchedRank{r, 1000 + r, reached, {"last line"}}; }

}  // namespace

TEST_CASE("own store: the timeout alone fails the attempt, once, with the judge's report") {
  Fixture f;
  f.ev.own_store = true;
  f.ev.arrived = 1;
  f.ev.where = "the store at 127.0.0.1:1";
  f.ev.ranks = {rank(0, true), rank(1, false)};
  f.watch.begin(3);
  f.watch.arm(3);
  f.run_to_end();
  CHECK(f.timed_out == std::vector<int>{3});
  CHECK(f.gathered == 1);
  CHECK(f.watch.report().find("rank 1 (pid 1001) never connected") != std::string::npos);
  f.watch.arm(3);  // the next watch of the attempt forgets the last report at once
  CHECK(f.watch.report().empty());
  f.watch.cancel();
}

TEST_CASE("NoEvidence: looks again each period, until the store's count says complete") {
  Fixture f;
  f.ev.own_store = false;  // rank0/file: no local rank provably waits
  f.ev.ranks = {rank(0, false), rank(1, false)};
  f.watch.begin(0);
  f.watch.arm(0);
  auto deadline = std::chrono::steady_clock::now() + 5s;
  while (f.gathered < 3 && std::chrono::steady_clock::now() < deadline) f.io.run_one_for(100ms);
  REQUIRE(f.gathered >= 3);  // re-armed after each NoEvidence
  CHECK_FALSE(f.watch.on_arrivals(1));
  CHECK(f.watch.on_arrivals(2));        // complete: the timer is cancelled
  CHECK_FALSE(f.watch.on_arrivals(2));  // said once
  const int seen = f.gathered;
  f.run_to_end();
  CHECK(f.gathered == seen);
  CHECK(f.timed_out.empty());
}

TEST_CASE("the ranks' own count in the evidence says complete: no verdict, no second look") {
  Fixture f;
  f.ev.arrived = 2;
  f.ev.ranks = {rank(0, true)};
  f.watch.begin(0);
  f.watch.arm(0);
  f.run_to_end();
  CHECK(f.gathered == 1);
  CHECK(f.timed_out.empty());
}

TEST_CASE("complete before the watch was armed (ranks connected while others spawned): never judged") {
  Fixture f;
  f.ev.own_store = true;
  f.watch.begin(0);
  CHECK(f.watch.on_arrivals(2));
  f.watch.arm(0);
  f.run_to_end();
  CHECK(f.gathered == 0);
  CHECK(f.timed_out.empty());
}

TEST_CASE("a new attempt cancels the last one's watch and counts its arrivals afresh") {
  Fixture f;
  f.ev.own_store = true;
  f.ev.ranks = {rank(1, false)};
  f.watch.begin(0);
  CHECK(f.watch.on_arrivals(2));
  f.watch.arm(0);
  f.watch.begin(1);  // attempt 0's timer must not judge attempt 1
  f.run_to_end();
  CHECK(f.gathered == 0);
  f.world = 4;  // e.g. a new round's plan
  CHECK_FALSE(f.watch.on_arrivals(2));
  f.watch.arm(1);
  f.run_to_end();
  CHECK(f.timed_out == std::vector<int>{1});
}
