#include <doctest/doctest.h>

#include <algorithm>

#include "launcher/rendezvous/rendezvous_machine.hpp"

using namespace ddp::launcher;
using ms = std::chrono::milliseconds;

namespace {

RdzvPolicy policy(int min, int max) {
  RdzvPolicy p;
  p.min_nodes = min;
  p.max_nodes = max;
  p.last_call = ms(1000);
  p.join_timeout = ms(10000);
  p.heartbeat_timeout = ms(3000);
  return p;
}

rdzv_event::Join join(const std::string& token, long now, int nproc = 2, int hint = -1, int seq = 0,
                      std::string host = "") {
  return {{token, host.empty() ? "h-" + token : host, nproc, hint, seq, {}}, ms(now)};
}

template <typename T>
std::vector<T> of(const std::vector<RdzvDecision>& ds) {
  std::vector<T> out;
  for (const auto& d : ds) {
    if (const auto* x = std::get_if<T>(&d)) out.push_back(*x);
  }
  return out;
}

const RdzvSlot& slot(const RdzvRound& r, const std::string& token) {
  auto it = std::find_if(r.nodes.begin(), r.nodes.end(), [&](const RdzvSlot& s) { return s.token == token; });
  REQUIRE(it != r.nodes.end());
  return *it;
}

}  // namespace

TEST_CASE("rendezvous: a round closes at once when MAX nodes joined") {
  RendezvousMachine m(policy(2, 3));
  CHECK(m.on(join("a", 0)).empty());
  CHECK(of<rdzv_decision::Publish>(m.on(join("b", 10))).empty());  // MIN reached: last call starts
  auto ds = m.on(join("c", 20));
  auto pub = of<rdzv_decision::Publish>(ds);
  REQUIRE(pub.size() == 1);
  CHECK(pub[0].round.round == 0);
  CHECK(pub[0].round.nodes.size() == 3);
  CHECK(pub[0].round.world_size == 6);
  CHECK(m.phase() == RdzvPhase::Running);
}

TEST_CASE("rendezvous: MIN nodes close the round when the last call ends, not before") {
  RendezvousMachine m(policy(2, 4));
  m.on(join("a", 0));
  m.on(join("b", 100));
  REQUIRE(m.next_deadline());
  CHECK(*m.next_deadline() == ms(1100));
  CHECK(m.on(rdzv_event::Tick{ms(1099)}).empty());
  auto pub = of<rdzv_decision::Publish>(m.on(rdzv_event::Tick{ms(1100)}));
  REQUIRE(pub.size() == 1);
  CHECK(pub[0].round.nodes.size() == 2);
}

TEST_CASE("rendezvous: below MIN the join timeout closes the job, naming the count") {
  RendezvousMachine m(policy(3, 3));
  m.on(join("a", 0));
  m.on(join("b", 0));
  for (long t = 1000; t < 10000; t += 1000) {
    m.on(rdzv_event::Heartbeat{"a", ms(t)});
    m.on(rdzv_event::Heartbeat{"b", ms(t)});
  }
  auto closes = of<rdzv_decision::Close>(m.on(rdzv_event::Tick{ms(10000)}));
  REQUIRE(closes.size() == 1);
  CHECK(closes[0].reason.find("only 2 of at least 3") != std::string::npos);
  CHECK(closes[0].pending.size() == 2);
  CHECK(m.phase() == RdzvPhase::Closed);
  auto rej = of<rdzv_decision::Reject>(m.on(join("c", 10001)));
  CHECK(rej.size() == 1);
}

TEST_CASE("rendezvous: global ranks follow each node's local world size") {
  RendezvousMachine m(policy(3, 3));
  m.on(join("a", 0, 1, 0));
  m.on(join("b", 0, 4, 1));
  auto pub = of<rdzv_decision::Publish>(m.on(join("c", 0, 2, 2)));
  REQUIRE(pub.size() == 1);
  const auto& r = pub[0].round;
  CHECK(r.world_size == 7);
  CHECK(slot(r, "a").rank_base == 0);
  CHECK(slot(r, "b").rank_base == 1);
  CHECK(slot(r, "c").rank_base == 5);
}

TEST_CASE("rendezvous: a --node-rank hint is honoured; the rest fill in by host") {
  RendezvousMachine m(policy(3, 3));
  m.on(join("x", 0, 1, -1, 0, "alpha"));
  m.on(join("y", 0, 1, 0, 0, "zulu"));
  auto r = of<rdzv_decision::Publish>(m.on(join("z", 0, 1, -1, 0, "beta")))[0].round;
  CHECK(slot(r, "y").node_rank == 0);
  CHECK(slot(r, "x").node_rank == 1);
  CHECK(slot(r, "z").node_rank == 2);
}

TEST_CASE("rendezvous: node ranks are stable across restarts while membership is unchanged") {
  RendezvousMachine m(policy(3, 3));
  // Hosts sort b < c < d, but they were ranked by hints the first time.
  m.on(join("d", 0, 1, 0));
  m.on(join("b", 0, 1, 2));
  auto r0 = of<rdzv_decision::Publish>(m.on(join("c", 0, 1, 1)))[0].round;
  // A member's workers fail: it rejoins without its hint this time; everyone starts round 1.
  auto ds = m.on(join("b", 100, 1, -1, 1));
  auto ends = of<rdzv_decision::EndRound>(ds);
  REQUIRE(ends.size() == 1);
  CHECK(ends[0].round == 0);
  CHECK(ends[0].members.size() == 3);
  m.on(join("c", 200, 1, -1, 1));
  auto pub = of<rdzv_decision::Publish>(m.on(join("d", 300, 1, -1, 1)));
  REQUIRE(pub.size() == 1);  // every expected node is back: no last call
  const auto& r1 = pub[0].round;
  CHECK(r1.round == 1);
  for (const char* t : {"b", "c", "d"}) CHECK(slot(r1, t).node_rank == slot(r0, t).node_rank);
  CHECK(slot(r1, "b").seq == 1);
}

TEST_CASE("rendezvous: a restarted supervisor (new token) keeps its host's rank") {
  RendezvousMachine m(policy(2, 2));
  m.on(join("a1", 0, 1, -1, 0, "hostA"));
  auto r0 = of<rdzv_decision::Publish>(m.on(join("b1", 0, 1, -1, 0, "hostB")))[0].round;
  int rank_a = slot(r0, "a1").node_rank;
  // hostA's supervisor dies and comes back as a new process.
  m.on(rdzv_event::Heartbeat{"b1", ms(2500)});
  auto ds = m.on(rdzv_event::Tick{ms(3000)});
  CHECK(of<rdzv_decision::NodeLost>(ds).size() == 1);
  CHECK(of<rdzv_decision::EndRound>(ds).size() == 1);
  m.on(join("b1", 3100, 1, -1, 1, "hostB"));
  auto r1 = of<rdzv_decision::Publish>(m.on(join("a2", 3200, 1, -1, 0, "hostA")))[0].round;
  CHECK(slot(r1, "a2").node_rank == rank_a);
}

TEST_CASE("rendezvous: a silent node is dead; the rest go on at the smaller size when at least MIN") {
  RendezvousMachine m(policy(2, 3));
  m.on(join("a", 0));
  m.on(join("b", 0));
  auto r0 = of<rdzv_decision::Publish>(m.on(join("c", 0)))[0].round;
  m.on(rdzv_event::Heartbeat{"a", ms(2000)});
  m.on(rdzv_event::Heartbeat{"c", ms(2000)});
  CHECK(m.on(rdzv_event::Tick{ms(2999)}).empty());
  auto ds = m.on(rdzv_event::Tick{ms(3000)});
  auto lost = of<rdzv_decision::NodeLost>(ds);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].token == "b");
  auto ends = of<rdzv_decision::EndRound>(ds);
  REQUIRE(ends.size() == 1);
  CHECK(ends[0].reason.find("h-b") != std::string::npos);
  CHECK(ends[0].members.size() == 3);  // the dead one too: if it comes back it learns it was dropped
  m.on(join("a", 3100, 2, -1, 1));
  auto pub = of<rdzv_decision::Publish>(m.on(join("c", 3200, 2, -1, 1)));
  REQUIRE(pub.size() == 1);
  CHECK(pub[0].round.nodes.size() == 2);
  CHECK(pub[0].round.world_size == 4);
  // The survivor with rank 0 keeps it; the other takes the free rank.
  if (slot(r0, "a").node_rank == 0) CHECK(slot(pub[0].round, "a").node_rank == 0);
}

TEST_CASE("rendezvous: below MIN after a death the survivors wait, then the join timeout closes the job") {
  RendezvousMachine m(policy(2, 2));
  m.on(join("a", 0));
  m.on(join("b", 0));
  m.on(rdzv_event::Heartbeat{"a", ms(2900)});
  CHECK(of<rdzv_decision::EndRound>(m.on(rdzv_event::Tick{ms(3000)})).size() == 1);
  CHECK(of<rdzv_decision::Publish>(m.on(join("a", 3100, 2, -1, 1))).empty());
  // b comes back in time: admitted.
  auto pub = of<rdzv_decision::Publish>(m.on(join("b", 4000, 2, -1, 5)));
  REQUIRE(pub.size() == 1);
  CHECK(slot(pub[0].round, "b").seq == 5);
}

TEST_CASE("rendezvous: a late node below MAX ends the round and is admitted at the next") {
  RendezvousMachine m(policy(2, 3));
  m.on(join("a", 0));
  m.on(join("b", 0));
  CHECK(of<rdzv_decision::Publish>(m.on(rdzv_event::Tick{ms(1000)})).size() == 1);
  auto ds = m.on(join("c", 1500));
  auto ends = of<rdzv_decision::EndRound>(ds);
  REQUIRE(ends.size() == 1);
  CHECK(ends[0].members.size() == 2);
  m.on(join("a", 1600, 2, -1, 1));
  auto pub = of<rdzv_decision::Publish>(m.on(join("b", 1700, 2, -1, 1)));
  REQUIRE(pub.size() == 1);
  CHECK(pub[0].round.nodes.size() == 3);
  CHECK(pub[0].round.round == 1);
}

TEST_CASE("rendezvous: at MAX a late node waits; a death makes room for it") {
  RendezvousMachine m(policy(1, 2));
  m.on(join("a", 0));
  m.on(join("b", 0));
  auto ds = m.on(join("c", 100));
  CHECK(ds.empty());
  CHECK(m.waiting() == 1);
  m.on(rdzv_event::Heartbeat{"a", ms(2900)});
  m.on(rdzv_event::Heartbeat{"c", ms(2900)});
  auto ends = of<rdzv_decision::EndRound>(m.on(rdzv_event::Tick{ms(3000)}));
  REQUIRE(ends.size() == 1);
  auto pub = of<rdzv_decision::Publish>(m.on(join("a", 3100, 2, -1, 1)));
  REQUIRE(pub.size() == 1);
  CHECK(pub[0].round.nodes.size() == 2);
  slot(pub[0].round, "c");
}

TEST_CASE("rendezvous: done nodes finish the job; a death then starts no new round") {
  RendezvousMachine m(policy(2, 3));
  m.on(join("a", 0));
  m.on(join("b", 0));
  m.on(join("c", 0));
  CHECK(m.on(rdzv_event::Done{"a", ms(100)}).empty());
  CHECK(m.phase() == RdzvPhase::Finishing);
  CHECK(m.on(rdzv_event::Done{"b", ms(200)}).empty());
  auto ds = m.on(rdzv_event::Tick{ms(3000)});  // c is silent
  CHECK(of<rdzv_decision::EndRound>(ds).empty());
  CHECK(of<rdzv_decision::AllDone>(ds).size() == 1);
  CHECK(m.phase() == RdzvPhase::Finished);
}

TEST_CASE("rendezvous: a member leaving ends the round, or closes the job below MIN") {
  {
    RendezvousMachine m(policy(2, 3));
    m.on(join("a", 0));
    m.on(join("b", 0));
    m.on(join("c", 0));
    auto ends = of<rdzv_decision::EndRound>(m.on(rdzv_event::Leave{"c", "restart budget spent", ms(50)}));
    REQUIRE(ends.size() == 1);
    CHECK(ends[0].reason.find("restart budget spent") != std::string::npos);
  }
  {
    RendezvousMachine m(policy(2, 2));
    m.on(join("a", 0));
    m.on(join("b", 0));
    auto closes = of<rdzv_decision::Close>(m.on(rdzv_event::Leave{"b", "SIGTERM", ms(50)}));
    REQUIRE(closes.size() == 1);
    CHECK(closes[0].round == 0);
    CHECK(closes[0].members.size() == 2);
    CHECK(m.phase() == RdzvPhase::Closed);
  }
}

TEST_CASE("rendezvous: node ranks do not depend on the order candidates are listed in") {
  std::vector<RankCandidate> c = {
      {"t1", "n2", -1, -1, -1}, {"t2", "n1", -1, -1, -1}, {"t3", "n3", 0, -1, -1}, {"t4", "n0", -1, 3, -1}};
  auto r = assign_node_ranks(c);
  CHECK(r == std::vector<int>{2, 1, 0, 3});
  std::reverse(c.begin(), c.end());
  CHECK(assign_node_ranks(c) == std::vector<int>{3, 0, 1, 2});
  // Clashing hints: the smaller token/host wins, the other gets a free rank.
  std::vector<RankCandidate> clash = {{"b", "h", 0, -1, -1}, {"a", "h", 0, -1, -1}};
  CHECK(assign_node_ranks(clash) == std::vector<int>{1, 0});
}

TEST_CASE("rendezvous: a round says whether its nodes differ from the round before") {
  RendezvousMachine m(policy(2, 3));
  m.on(join("a", 0));
  m.on(join("b", 0));
  auto r0 = of<rdzv_decision::Publish>(m.on(rdzv_event::Tick{ms(1000)}));
  REQUIRE(r0.size() == 1);
  CHECK_FALSE(r0[0].round.membership_changed);
  m.on(join("a", 1100, 2, -1, 1));  // a's workers failed: same nodes next round
  auto r1 = of<rdzv_decision::Publish>(m.on(join("b", 1200, 2, -1, 1)));
  REQUIRE(r1.size() == 1);
  CHECK_FALSE(r1[0].round.membership_changed);
  m.on(join("c", 1300));  // scale up
  m.on(join("a", 1400, 2, -1, 2));
  auto r2 = of<rdzv_decision::Publish>(m.on(join("b", 1500, 2, -1, 2)));
  REQUIRE(r2.size() == 1);
  CHECK(r2[0].round.membership_changed);
}

TEST_CASE("rendezvous: the host leaving closes the job for everyone (its store goes with it)") {
  RendezvousMachine m(policy(2, 3));
  m.on(join("h", 0));
  m.on(join("a", 0));
  m.on(join("b", 0));
  auto closes = of<rdzv_decision::Close>(m.on(rdzv_event::Leave{"h", "SIGINT", ms(10), true}));
  REQUIRE(closes.size() == 1);
  CHECK(closes[0].reason.find("rendezvous host h-h left") != std::string::npos);
  CHECK(closes[0].members.size() == 3);
}

TEST_CASE("rendezvous: a node whose store connection closed is dead after the grace, not the heartbeat timeout") {
  RendezvousMachine m(policy(2, 3));  // heartbeat timeout 3000 ms, connection grace 1000 ms
  m.on(join("a", 0));
  m.on(join("b", 0));
  m.on(join("c", 0));
  CHECK(m.on(rdzv_event::ConnectionClosed{"c", ms(100)}).empty());  // suspected, not yet dead
  CHECK(m.next_deadline() == ms(1100));
  // The survivors' workers failed with c's: they rejoin, and wait for c (expected back).
  CHECK(of<rdzv_decision::EndRound>(m.on(join("a", 400, 2, -1, 1))).size() == 1);
  CHECK(of<rdzv_decision::Publish>(m.on(join("b", 450, 2, -1, 1))).empty());
  CHECK(m.on(rdzv_event::Tick{ms(1099)}).empty());
  auto ds = m.on(rdzv_event::Tick{ms(1100)});
  auto lost = of<rdzv_decision::NodeLost>(ds);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].token == "c");
  CHECK(lost[0].silent == ms(1100));
  CHECK(lost[0].reason == "its store connection closed 1000 ms ago and it did not reconnect within the 1000 ms grace");
  auto pub = of<rdzv_decision::Publish>(ds);  // everyone else is back: the next round at once
  REQUIRE(pub.size() == 1);
  CHECK(pub[0].round.nodes.size() == 2);
}

TEST_CASE("rendezvous: a lost connection during a running round ends it at the grace, naming why") {
  RendezvousMachine m(policy(2, 3));
  m.on(join("a", 0));
  m.on(join("b", 0));
  m.on(join("c", 0));
  m.on(rdzv_event::ConnectionClosed{"b", ms(500)});
  auto ds = m.on(rdzv_event::Tick{ms(1500)});
  REQUIRE(of<rdzv_decision::NodeLost>(ds).size() == 1);
  auto ends = of<rdzv_decision::EndRound>(ds);
  REQUIRE(ends.size() == 1);
  CHECK(ends[0].reason ==
        "lost node(s) h-b (its store connection closed 1000 ms ago and it did not reconnect within the 1000 ms grace)");
}

TEST_CASE("rendezvous: a node that reconnects within the grace is not dropped") {
  RendezvousMachine m(policy(2, 3));
  m.on(join("a", 0));
  m.on(join("b", 0));
  m.on(join("c", 0));
  m.on(rdzv_event::ConnectionClosed{"c", ms(100)});
  CHECK(m.on(rdzv_event::Reconnected{"c", ms(700)}).empty());
  CHECK(m.on(rdzv_event::Tick{ms(1100)}).empty());
  CHECK(m.on(rdzv_event::Tick{ms(2000)}).empty());
  CHECK(m.next_deadline() == ms(3000));  // only the heartbeats' deadlines are left (a and b: 0 + 3000)
  // Closed again later: the grace counts from the new close.
  for (const auto* t : {"a", "b", "c"}) m.on(rdzv_event::Heartbeat{t, ms(2500)});
  m.on(rdzv_event::ConnectionClosed{"c", ms(2600)});
  CHECK(m.on(rdzv_event::Tick{ms(3599)}).empty());
  CHECK(of<rdzv_decision::NodeLost>(m.on(rdzv_event::Tick{ms(3600)})).size() == 1);
  CHECK(m.phase() == RdzvPhase::Gathering);
}

TEST_CASE("rendezvous: a silent node (no close: a cut link) still waits out the heartbeat timeout") {
  RendezvousMachine m(policy(2, 3));
  m.on(join("a", 0));
  m.on(join("b", 0));
  m.on(join("c", 0));
  for (const auto* t : {"a", "b"}) m.on(rdzv_event::Heartbeat{t, ms(2000)});
  CHECK(m.on(rdzv_event::Tick{ms(2999)}).empty());
  auto lost = of<rdzv_decision::NodeLost>(m.on(rdzv_event::Tick{ms(3000)}));
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].reason == "no heartbeat for 3000 ms");
}

TEST_CASE("rendezvous: a finished node's connection closing is not a death; nor is an unknown node's") {
  RendezvousMachine m(policy(2, 3));
  m.on(join("a", 0));
  m.on(join("b", 0));
  m.on(join("c", 0));
  m.on(rdzv_event::Done{"c", ms(100)});
  CHECK(m.on(rdzv_event::ConnectionClosed{"c", ms(150)}).empty());
  CHECK(m.on(rdzv_event::ConnectionClosed{"stranger", ms(150)}).empty());
  CHECK(m.on(rdzv_event::Tick{ms(2000)}).empty());
  m.on(rdzv_event::Done{"a", ms(2100)});
  CHECK(of<rdzv_decision::AllDone>(m.on(rdzv_event::Done{"b", ms(2200)})).size() == 1);
}

TEST_CASE("rendezvous: a waiting node (joined, not admitted) whose connection closes is dropped after the grace") {
  RendezvousMachine m(policy(1, 1));
  m.on(join("a", 0));  // round 0 at MAX
  m.on(join("w", 100));
  CHECK(m.waiting() == 1);
  m.on(rdzv_event::ConnectionClosed{"w", ms(200)});
  auto lost = of<rdzv_decision::NodeLost>(m.on(rdzv_event::Tick{ms(1200)}));
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].token == "w");
  CHECK(m.waiting() == 0);
  CHECK(m.phase() == RdzvPhase::Running);
}

// The job's restart budget, kept by the host (issue 28): one charge per failed round.
namespace {

RdzvPolicy budgeted(int max_restarts, int max_no_progress = 3, bool checkpoint_file = false) {
  auto p = policy(2, 2);
  p.budget = RestartBudgetPolicy{.max_restarts = max_restarts,
                                 .max_no_progress_restarts = max_no_progress,
                                 .mode = BudgetMode::Count,
                                 .checkpoint_file = checkpoint_file};
  return p;
}

// A rejoin after `round`, saying how it ended for the node.
rdzv_event::Join rejoin(const std::string& token, long now, int round, bool failed, int seq,
                        std::optional<std::int64_t> checkpoint = std::nullopt) {
  auto j = join(token, now, 2, -1, seq);
  j.node.last = {.round = round, .failed = failed, .mark = {.checkpoint = checkpoint, .step = std::nullopt}};
  return j;
}

}  // namespace

TEST_CASE("job budget: a failed round costs one restart, not one per node; spent, the close says so to all") {
  RendezvousMachine m(budgeted(1));
  m.on(join("a", 0));
  REQUIRE(of<rdzv_decision::Publish>(m.on(join("b", 0))).size() == 1);
  // Round 0: both nodes' groups fail; each rejoins saying so.
  CHECK(of<rdzv_decision::EndRound>(m.on(rejoin("a", 100, 0, true, 1))).size() == 1);
  auto pub = of<rdzv_decision::Publish>(m.on(rejoin("b", 110, 0, true, 1)));
  REQUIRE(pub.size() == 1);
  REQUIRE(pub[0].round.restart);
  CHECK(pub[0].round.restart->charged);
  CHECK(pub[0].round.restart->restarts_left == 0);
  CHECK(m.budget()->charged() == 1);  // one for the round, though two nodes failed
  // Round 1: only b fails; a was stopped by the round. The budget is spent: no round 2.
  m.on(rejoin("b", 200, 1, true, 2));
  auto ds = m.on(rejoin("a", 210, 1, false, 2));
  CHECK(of<rdzv_decision::Publish>(ds).empty());
  auto closes = of<rdzv_decision::Close>(ds);
  REQUIRE(closes.size() == 1);
  REQUIRE(closes[0].restart);
  CHECK(closes[0].restart->verdict == RestartVerdict::BudgetSpent);
  CHECK(closes[0].restart->exit_code() == 1);
  CHECK(closes[0].reason.find("round 1 failed on node(s) h-b") != std::string::npos);
  CHECK(closes[0].reason.find("--max-restarts 1") != std::string::npos);
  CHECK(closes[0].pending.size() == 2);  // both are told, with the same decision
  CHECK(m.phase() == RdzvPhase::Closed);
}

TEST_CASE("job budget: a round that ended for a membership change, or with no failure, is free") {
  auto p = policy(2, 3);
  p.budget = budgeted(0).budget;
  RendezvousMachine grow(p);
  grow.on(join("a", 0));
  grow.on(join("b", 0));
  REQUIRE(of<rdzv_decision::Publish>(grow.on(rdzv_event::Tick{ms(1000)})).size() == 1);
  // c joins (scale up): the round ends; nobody failed.
  grow.on(join("c", 1100));
  grow.on(rejoin("a", 1200, 0, false, 1));
  auto pub = of<rdzv_decision::Publish>(grow.on(rejoin("b", 1300, 0, false, 1)));
  REQUIRE(pub.size() == 1);
  CHECK_FALSE(pub[0].round.restart);
  // b's group fails because c died (its peers' connections reset): the membership changed, free.
  grow.on(rejoin("b", 1400, 1, true, 2));
  grow.on(rejoin("a", 1400, 1, false, 2));
  std::vector<RdzvDecision> ds;  // c falls silent: dead at the heartbeat timeout
  for (long t = 1500; t <= 5000; t += 500) {
    for (const auto* n : {"a", "b"}) {
      auto more = grow.on(rdzv_event::Heartbeat{n, ms(t)});
      ds.insert(ds.end(), more.begin(), more.end());
    }
  }
  CHECK(of<rdzv_decision::Close>(ds).empty());
  pub = of<rdzv_decision::Publish>(ds);
  REQUIRE(pub.size() == 1);
  CHECK(pub[0].round.membership_changed);
  CHECK_FALSE(pub[0].round.restart);
  CHECK(grow.budget()->charged() == 0);
}

TEST_CASE("job budget: progress is the best any node reported; the baseline is the best any started from") {
  RendezvousMachine m(budgeted(10, 1, /*checkpoint_file=*/true));
  // a starts from checkpoint 100, b has no file yet.
  auto ja = join("a", 0);
  ja.node.last.mark.checkpoint = 100;
  m.on(ja);
  m.on(join("b", 0));
  // Round 0 fails: a's checkpoint still reads 100 (no progress), b's none.
  m.on(rejoin("a", 100, 0, true, 1, 100));
  auto pub = of<rdzv_decision::Publish>(m.on(rejoin("b", 100, 0, false, 1)));
  REQUIRE(pub.size() == 1);
  CHECK_FALSE(pub[0].round.restart->progressed);
  CHECK(pub[0].round.restart->no_progress_in_a_row == 1);
  // Round 1 fails on b; a's checkpoint advanced: the job progressed.
  m.on(rejoin("b", 200, 1, true, 2));
  pub = of<rdzv_decision::Publish>(m.on(rejoin("a", 200, 1, false, 2, 120)));
  REQUIRE(pub.size() == 1);
  CHECK(pub[0].round.restart->progressed);
  CHECK(pub[0].round.restart->checkpoint == 120);
  CHECK(pub[0].round.restart->no_progress_in_a_row == 0);
  // Two rounds in a row without progress: --max-no-progress-restarts 1 ends the job with exit code 3.
  m.on(rejoin("a", 300, 2, true, 3, 120));
  m.on(rejoin("b", 300, 2, true, 3));
  m.on(rejoin("a", 400, 3, true, 4, 120));
  auto closes = of<rdzv_decision::Close>(m.on(rejoin("b", 400, 3, true, 4)));
  REQUIRE(closes.size() == 1);
  CHECK(closes[0].restart->verdict == RestartVerdict::NoProgress);
  CHECK(closes[0].restart->exit_code() == kNoProgressExitCode);
  CHECK(closes[0].reason.find("h-a, h-b") != std::string::npos);
}

TEST_CASE("job budget: a report of an older round is not this round's") {
  RendezvousMachine m(budgeted(0));
  m.on(join("a", 0));
  m.on(join("b", 0));
  // a rejoins claiming a failure of a round that is not the running one (-> ignored), b stopped.
  m.on(rejoin("a", 100, 7, true, 1));
  auto pub = of<rdzv_decision::Publish>(m.on(rejoin("b", 100, 0, false, 1)));
  REQUIRE(pub.size() == 1);
  CHECK_FALSE(pub[0].round.restart);
}
