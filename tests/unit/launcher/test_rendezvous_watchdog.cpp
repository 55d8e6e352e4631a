// The rendezvous watchdog's judgment from the store's count and each live local rank's evidence.
#include <doctest/doctest.h>

#include "launcher/rendezvous/rendezvous_watchdog.hpp"
#include "launcher/supervisor/supervisor_config.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;
using Verdict = RendezvousJudgment::Verdict;

namespace {

RendezvousEvidence evidence(bool own_store, std::optional<std::int64_t> arrived, std::vector<WatchedRank> ranks) {
  RendezvousEvidence ev;
  ev.own_store = own_store;
  ev.arrived = arrived;
  ev.where = "the store at 127.0.0.1:29500";
  ev.ranks = std::move(ranks);
  return ev;
}

}  // namespace

TEST_CASE("watchdog with our own store: the timeout fails the attempt, naming who never connected") {
  auto ev = evidence(true, 1, {{0, 100, true, {}}, {1, 101, false, {"importing", "loading data"}}, {2, 102, false, {}}});
  auto j = judge_rendezvous(ev, 3, 1, 5000ms);
  CHECK(j.verdict == Verdict::TimedOut);
  CHECK(j.missing == std::vector<int>{1, 2});
  CHECK(j.report ==
        "rendezvous not complete after 5 s: 1 of 3 ranks reached the store at 127.0.0.1:29500\n"
        "    rank 1 (pid 101) never connected; last output:\n"
        "      importing\n"
        "      loading data\n"
        "    rank 2 (pid 102) never connected; last output: (nothing)");
  // Our own count is exact: even with nobody waiting, the attempt fails; other nodes are counted.
  auto none = judge_rendezvous(evidence(true, 0, {{4, 200, false, {}}}), 8, 2, 600000ms);
  CHECK(none.verdict == Verdict::TimedOut);
  CHECK(none.report.find("0 of 8 ranks") != std::string::npos);
  CHECK(none.report.find("\n    (ranks of other nodes are counted, not named)") != std::string::npos);
}

TEST_CASE("watchdog without our store: complete by the ranks' count, a hang only with a waiting rank") {
  // The ranks' own count reached the world size: complete, whatever /proc says.
  CHECK(judge_rendezvous(evidence(false, 2, {{0, 100, false, {}}}), 2, 1, 5000ms).verdict == Verdict::Complete);
  // Nobody arrived yet (a slow import): no proof of a hang, look again.
  auto slow = judge_rendezvous(evidence(false, std::nullopt, {{0, 100, false, {}}, {1, 101, false, {}}}), 2, 1, 5000ms);
  CHECK(slow.verdict == Verdict::NoEvidence);
  CHECK(slow.missing.size() == 2);
  // Everyone local arrived (the others are remote): nothing to name.
  CHECK(judge_rendezvous(evidence(false, 1, {{0, 100, true, {}}}), 2, 2, 5000ms).verdict == Verdict::NoEvidence);
  // Rank 0 waits in the store, rank 1 never came: the attempt fails; an unknown count shows as ?.
  auto hang = judge_rendezvous(evidence(false, std::nullopt, {{0, 100, true, {}}, {1, 101, false, {}}}), 2, 1, 5000ms);
  CHECK(hang.verdict == Verdict::TimedOut);
  CHECK(hang.missing == std::vector<int>{1});
  CHECK(hang.report.rfind("rendezvous not complete after 5 s: ? of 2 ranks reached", 0) == 0);
}

TEST_CASE("watchdog with a FileStore says the rank never reached it") {
  auto ev = evidence(false, 0, {{0, 100, true, {}}, {1, 101, false, {}}});
  ev.file_store = true;
  ev.where = "the FileStore /tmp/fs";
  auto j = judge_rendezvous(ev, 2, 1, 2000ms);
  CHECK(j.verdict == Verdict::TimedOut);
  CHECK(j.report.find("0 of 2 ranks reached the FileStore /tmp/fs\n    rank 1 (pid 101) never reached the FileStore;") !=
        std::string::npos);
}

TEST_CASE("store mode names, as the started event spells them") {
  CHECK(std::string(store_mode_name(StoreMode::Agent)) == "agent");
  CHECK(std::string(store_mode_name(StoreMode::Rank0)) == "rank0");
  CHECK(std::string(store_mode_name(StoreMode::File)) == "file");
}
