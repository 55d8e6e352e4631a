// The joining side of the dynamic rendezvous, without sockets or threads: a simulated store and
// clock answer the machine's requests (launcher/rendezvous/rendezvous_client.cpp does the same with a real client).
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>

#include "launcher/rendezvous/rendezvous_client_machine.hpp"

using namespace ddp::launcher;
using ms = std::chrono::milliseconds;
using json = nlohmann::json;
namespace req = rdzv_client_request;
namespace ev = rdzv_client_event;
namespace note = rdzv_client_notice;
using Kind = ev::CommandKind;

namespace {

const std::string kToken = "n1:7:0000cafe";
const std::string kHostKey = "rdzv/job/host";
const std::string kAssign1 = "rdzv/job/assign/" + kToken + "/1";
const std::string kHb = "rdzv/job/hb/" + kToken;
const std::string kEndpoint = "h0:29400";

// heartbeat timeout 3 s: a heartbeat every 1 s, WAITs of 200 ms, connect tries of 1.5 s.
RdzvClientSettings settings(long lost_window_ms = 3000) {
  RdzvClientSettings s;
  s.prefix = "rdzv/job/";
  s.endpoint = kEndpoint;
  s.node = {kToken, "n1", 2, -1, 0, {}};
  s.policy.min_nodes = 1;
  s.policy.max_nodes = 3;
  s.policy.join_timeout = ms(10000);
  s.policy.heartbeat_timeout = ms(3000);
  s.store_lost_window = ms(lost_window_ms);
  return s;
}

std::string host_key(const std::string& token, int pid) {
  return json{{"token", token}, {"host", "h0"}, {"pid", pid}}.dump();
}

std::string assignment(int round, int node_rank, bool changed = false) {
  return json{{"round", round},      {"node_rank", node_rank},     {"nnodes", 2},
              {"world_size", 4},     {"rank_base", 2 * node_rank}, {"nproc", 2},
              {"master_addr", "h0"}, {"master_port", 41000},       {"changed", changed},
              {"store_node_rank", 0}}
      .dump();
}

std::string wake(const std::string& reason, bool closed) { return json{{"reason", reason}, {"closed", closed}}.dump(); }

// The store and the clock: Up answers at once (1 ms); Refused fails every call at once (a
// connect tries for as long as it may); Dark lets every call run into its timeout.
enum class Link { Up, Refused, Dark };

struct Sim {
  RendezvousClientMachine m;
  long t = 0;
  std::map<std::string, std::string> keys{{kHostKey, host_key("h0:1:0000beef", 4242)}};
  Link link = Link::Up;
  std::deque<ev::Command> commands;  // what the supervisor sent, not yet taken
  struct Seen {
    long t;
    RdzvClientNotice n;
  };
  std::vector<Seen> seen;  // every notice, with its time
  std::vector<std::pair<long, RdzvClientRequest>> asked;
  RdzvClientRequest next;

  explicit Sim(RdzvClientSettings s = settings()) : m(std::move(s)) { absorb(m.start(ms(0))); }

  void absorb(RdzvClientStep st) {
    for (auto& n : st.notices) seen.push_back({t, std::move(n)});
    next = std::move(st.next);
    asked.emplace_back(t, next);
  }
  void step() { absorb(m.on(answer(next))); }
  void run_until(const std::function<bool()>& done, long limit_ms = 60000) {
    const long until = t + limit_ms;
    while (!done()) {
      REQUIRE(t < until);
      step();
    }
  }
  void run_for(long d) {
    const long until = t + d;
    while (t < until) step();
  }
  void send(Kind k, std::string why = {}, RdzvAttemptReport last = {}) {
    commands.push_back({ms(t), k, std::move(why), std::move(last)});
  }

  ev::Failed fail(long cost, bool timed_out) {
    t += cost;
    return {ms(t), timed_out ? "timed out" : "connection refused", timed_out};
  }
  RdzvClientEvent answer(const RdzvClientRequest& r) {
    const long call_timeout = m.timing().connect_try.count();
    if (auto* c = std::get_if<req::Connect>(&r)) {
      if (link != Link::Up) return fail(c->within.count(), link == Link::Dark);
      t += 1;
      auto it = keys.find(kHostKey);
      return ev::Connected{ms(t), it == keys.end() ? std::nullopt : std::optional(it->second)};
    }
    if (auto* p = std::get_if<req::Pause>(&r)) {
      t += p->duration.count();
      return ev::Tick{ms(t)};
    }
    if (auto* tc = std::get_if<req::TakeCommand>(&r)) {
      if (commands.empty()) {
        t += tc->wait.count();
        return ev::Tick{ms(t)};
      }
      auto c = commands.front();
      commands.pop_front();
      c.now = ms(t);
      return c;
    }
    if (link == Link::Refused) return fail(1, false);
    if (link == Link::Dark) {
      auto* w = std::get_if<req::Wait>(&r);
      return fail((w ? w->chunk.count() : 0) + call_timeout, true);
    }
    if (auto* w = std::get_if<req::Wait>(&r)) {
      if (!keys.count(w->key)) return fail(w->chunk.count(), true);
      t += 1;
      return ev::Ok{ms(t)};
    }
    t += 1;
    if (auto* g = std::get_if<req::Get>(&r)) return ev::Value{ms(t), keys.at(g->key)};
    if (auto* s = std::get_if<req::Set>(&r)) keys[s->key] = s->value;
    if (auto* a = std::get_if<req::Add>(&r))
      keys[a->key] = std::to_string(std::stoi(keys[a->key].empty() ? "0" : keys[a->key]) + 1);
    return ev::Ok{ms(t)};
  }

  template <typename T>
  std::vector<T> notices() const {
    std::vector<T> out;
    for (const auto& s : seen) {
      if (const auto* x = std::get_if<T>(&s.n)) out.push_back(*x);
    }
    return out;
  }
  template <typename T>
  long first_time() const {
    for (const auto& s : seen) {
      if (std::holds_alternative<T>(s.n)) return s.t;
    }
    return -1;
  }
  std::vector<std::string> logs(note::Log::Level level) const {
    std::vector<std::string> out;
    for (const auto& l : notices<note::Log>()) {
      if (l.level == level) out.push_back(l.text);
    }
    return out;
  }
  template <typename T>
  int asked_count(long since = 0) const {
    int n = 0;
    for (const auto& [at, r] : asked) n += at >= since && std::holds_alternative<T>(r);
    return n;
  }
  bool waiting_on(const std::string& key) const {
    const auto* w = std::get_if<req::Wait>(&next);
    return w && w->key == key;
  }
  bool has_closed() const { return !notices<note::Closed>().empty(); }
  std::string closed() const {
    auto c = notices<note::Closed>();
    REQUIRE(c.size() == 1);
    return c[0].reason;
  }

  // Connected, joined, assigned round 0: running.
  void admit() {
    step();  // Connected
    send(Kind::Join);
    run_until([&] { return waiting_on(kAssign1); });
    keys[kAssign1] = assignment(0, 1);
    run_until([&] { return !notices<note::Assigned>().empty(); });
    REQUIRE(m.mode() == RdzvClientMode::Running);
  }
};

}  // namespace

TEST_CASE("rendezvous client: timings follow the heartbeat timeout") {
  auto t = RdzvClientTiming::of(settings().policy);
  CHECK(t.heartbeat_every == ms(1000));
  CHECK(t.wait_chunk == ms(200));
  CHECK(t.connect_try == ms(1500));
  CHECK(t.pause == ms(200));
  RdzvPolicy fast;
  fast.heartbeat_timeout = ms(90);
  t = RdzvClientTiming::of(fast);
  CHECK(t.heartbeat_every == ms(50));
  CHECK(t.wait_chunk == ms(50));
  CHECK(t.connect_try == ms(1000));
  RdzvPolicy slow;
  slow.heartbeat_timeout = ms(60000);
  CHECK(RdzvClientTiming::of(slow).heartbeat_every == ms(5000));
}

TEST_CASE("rendezvous client: connect, join, wait to be admitted, run the round") {
  Sim s;
  CHECK(std::get<req::Connect>(s.next).within == ms(1500));
  s.step();
  CHECK(s.notices<note::FirstContact>().size() == 1);
  CHECK(s.m.mode() == RdzvClientMode::Idle);
  CHECK(std::get<req::TakeCommand>(s.next).wait == ms(1000));  // idle: wait for the supervisor

  s.send(Kind::Join);
  s.step();
  auto set = std::get<req::Set>(s.next);
  CHECK(set.key == "rdzv/job/join/" + kToken + "/1");
  CHECK(json::parse(set.value) ==
        json{{"token", kToken},
             {"host", "n1"},
             {"nproc", 2},
             {"hint", -1},
             {"seq", 1},
             {"last", {{"round", -1}, {"failed", false}, {"checkpoint", nullptr}, {"step", nullptr}}}});
  s.step();
  CHECK(std::get<req::Add>(s.next).key == kHb);  // the first heartbeat is due at once
  s.step();
  CHECK(s.waiting_on(kAssign1));
  CHECK(std::get<req::Wait>(s.next).chunk == ms(200));
  CHECK(s.m.mode() == RdzvClientMode::Assign);
  s.step();  // a chunk passes: take a command without waiting, then wait again
  CHECK(std::get<req::TakeCommand>(s.next).wait == ms(0));

  s.run_for(2500);
  CHECK(s.notices<note::Assigned>().empty());
  s.keys[kAssign1] = assignment(0, 1, true);
  s.run_until([&] { return !s.notices<note::Assigned>().empty(); });
  auto a = s.notices<note::Assigned>()[0].assignment;
  CHECK(a.round == 0);
  CHECK(a.node_rank == 1);
  CHECK(a.nnodes == 2);
  CHECK(a.world_size == 4);
  CHECK(a.rank_base == 2);
  CHECK(a.nproc == 2);
  CHECK(a.master_addr == "h0");
  CHECK(a.master_port == 41000);
  CHECK(a.membership_changed);
  CHECK(s.m.round() == 0);
  CHECK(s.m.mode() == RdzvClientMode::Running);
  s.step();
  CHECK(s.waiting_on("rdzv/job/wake/" + kToken + "/0"));
  CHECK_FALSE(s.has_closed());
  CHECK(s.notices<note::Log>().empty());
}

TEST_CASE("rendezvous client: a heartbeat every interval while idle, joining and running; none when over") {
  Sim s;
  s.step();
  s.run_for(5000);  // idle
  s.send(Kind::Join);
  s.run_for(5000);  // waiting to be admitted
  s.keys[kAssign1] = assignment(0, 1);
  s.run_until([&] { return !s.notices<note::Assigned>().empty(); });
  s.run_for(5000);  // running
  std::vector<long> sent;
  for (const auto& [at, r] : s.asked) {
    if (std::holds_alternative<req::Add>(r)) sent.push_back(at);
  }
  REQUIRE(sent.size() >= 13);
  CHECK(sent[0] <= 1001 + 2);  // the first one at once after connecting (or idle waiting)
  for (std::size_t i = 1; i < sent.size(); ++i) {
    // Every interval, checked between waits: late by at most one WAIT chunk or one idle wait.
    CHECK(sent[i] - sent[i - 1] >= 1000);
    CHECK(sent[i] - sent[i - 1] <= 1000 + 200 + 3);
  }
  s.send(Kind::Done);
  s.run_until([&] { return s.m.mode() == RdzvClientMode::Over; });
  const long over = s.t;
  s.run_for(5000);
  CHECK(s.asked_count<req::Add>(over) == 0);
}

TEST_CASE("rendezvous client: no round within the join timeout closes the job; not a moment before") {
  Sim s;
  s.step();
  s.send(Kind::Join);
  s.run_until([&] { return s.waiting_on(kAssign1); });
  const long joined = s.t;
  s.run_until([&] { return s.t >= joined + 9700; });  // a WAIT chunk is 200 ms
  CHECK_FALSE(s.has_closed());
  s.run_until([&] { return s.has_closed(); });
  CHECK(s.closed() == "no rendezvous round admitted this node within the join timeout (10 s)");
  CHECK(s.first_time<note::Closed>() > joined + 10000);
  CHECK(s.first_time<note::Closed>() <= joined + 10000 + 200);
  CHECK(s.m.mode() == RdzvClientMode::Over);
  CHECK(std::get<req::TakeCommand>(s.next).wait == ms(1000));
}

TEST_CASE("rendezvous client: the host closes the job while this node waits to be admitted") {
  Sim s;
  s.step();
  s.send(Kind::Join);
  s.run_until([&] { return s.waiting_on(kAssign1); });
  s.keys[kAssign1] = wake("the job is finishing: node n2 finished", true);
  s.run_until([&] { return s.has_closed(); });
  CHECK(s.closed() == "the job is finishing: node n2 finished");
  CHECK(s.m.mode() == RdzvClientMode::Over);
  CHECK(s.notices<note::Assigned>().empty());
}

TEST_CASE("rendezvous client: a member leaves, the round ends, the next join is admitted to the next round") {
  Sim s;
  s.admit();
  s.keys["rdzv/job/wake/" + kToken + "/0"] = wake("node n2 is dead (no heartbeat for 3000 ms)", false);
  s.run_until([&] { return !s.notices<note::RoundEnded>().empty(); });
  CHECK(s.notices<note::RoundEnded>()[0].reason == "node n2 is dead (no heartbeat for 3000 ms)");
  CHECK(s.m.mode() == RdzvClientMode::Idle);
  CHECK(std::get<req::TakeCommand>(s.next).wait == ms(1000));  // until the supervisor's workers stopped

  s.send(Kind::Join);
  const std::string assign2 = "rdzv/job/assign/" + kToken + "/2";
  s.run_until([&] { return s.waiting_on(assign2); });
  CHECK(s.keys.count("rdzv/job/join/" + kToken + "/2"));
  s.keys[assign2] = assignment(1, 0, true);
  s.run_until([&] { return s.notices<note::Assigned>().size() == 2; });
  auto a = s.notices<note::Assigned>()[1].assignment;
  CHECK(a.round == 1);
  CHECK(a.node_rank == 0);
  CHECK(a.membership_changed);
  s.step();
  CHECK(s.waiting_on("rdzv/job/wake/" + kToken + "/1"));
  // Closed while running: the job is over.
  s.keys["rdzv/job/wake/" + kToken + "/1"] = wake("node n2 gave up: its job ended with exit code 1", true);
  s.run_until([&] { return s.has_closed(); });
  CHECK(s.closed() == "node n2 gave up: its job ended with exit code 1");
}

TEST_CASE("rendezvous client: a restart joins again while running (a new join number)") {
  Sim s;
  s.admit();
  s.send(Kind::Join);  // a rank failed: every restart goes through a new round
  s.run_until([&] { return s.waiting_on("rdzv/job/assign/" + kToken + "/2"); });
  CHECK(s.m.mode() == RdzvClientMode::Assign);
}

TEST_CASE("rendezvous client: the store lost: one warning, reconnects, then the error at the store-lost window") {
  Sim s;
  s.admit();
  s.run_for(500);
  s.link = Link::Refused;
  s.run_until([&] { return s.has_closed(); });
  auto warns = s.logs(note::Log::Warn);
  REQUIRE(warns.size() == 1);
  CHECK(warns[0] ==
        "rendezvous store h0:29400 not answering (connection refused); reconnecting for up to 3000 ms since its last "
        "answer");
  CHECK(s.notices<note::RoundEnded>().empty());  // the window is the heartbeat timeout: it closes instead
  CHECK(s.asked_count<req::Connect>() >= 3);     // the first, and reconnects
  CHECK(s.asked_count<req::Pause>() >= 2);
  CHECK(s.closed() ==
        "the rendezvous store at h0:29400 is gone: no answer for 3.0 s, reconnecting with backoff (last error: "
        "connection refused). It lived in the supervisor of node 0 (host h0, pid 4242), which was killed, or whose "
        "host is down or cut off from this node; the job's rendezvous state died with it, so no node can go on: "
        "stopping this node's workers. Restart the job on every node (--rdzv-conf store_lost_timeout=SECONDS waits "
        "longer for a flaky link; now 3 s)");
  CHECK(s.m.mode() == RdzvClientMode::Over);
  // Over: no more store calls, ever.
  const long over = s.t;
  s.run_for(5000);
  CHECK(s.asked_count<req::Connect>(over) == 0);
  CHECK(s.asked_count<req::Add>(over) == 0);
}

TEST_CASE("rendezvous client: each reconnect try is cut to what is left of the window") {
  Sim s;
  s.admit();
  s.link = Link::Refused;
  s.run_until([&] { return s.has_closed(); });
  std::vector<long> tries;
  for (const auto& [at, r] : s.asked) {
    if (const auto* c = std::get_if<req::Connect>(&r)) tries.push_back(c->within.count());
  }
  REQUIRE(tries.size() >= 3);
  CHECK(tries[1] == 1500);  // the first reconnect: a whole try
  CHECK(tries.back() < 1500);
}

TEST_CASE("rendezvous client: the store lost on a dark link (calls time out) is the same error") {
  Sim s;
  s.admit();
  s.link = Link::Dark;
  s.run_until([&] { return s.has_closed(); });
  CHECK(s.logs(note::Log::Warn).size() == 1);
  CHECK(s.closed().find("the rendezvous store at h0:29400 is gone: no answer for ") == 0);
  CHECK(s.closed().find("(last error: timed out)") != std::string::npos);
}

TEST_CASE("rendezvous client: the store back before the window runs out: no error; a later outage warns again") {
  Sim s;
  s.admit();
  s.link = Link::Refused;
  s.run_until([&] { return s.asked_count<req::Pause>() == 2; });  // two pauses: one failed reconnect between
  const long down_since = s.first_time<note::DropConnection>();
  s.link = Link::Up;
  s.run_until([&] { return !s.logs(note::Log::Info).empty(); });
  auto info = s.logs(note::Log::Info)[0];
  long last_answer = -1;  // the WAIT that found the assignment: a GET was asked when it answered
  for (const auto& [at, r] : s.asked) {
    if (at < down_since && std::holds_alternative<req::Get>(r)) last_answer = at;
  }
  CHECK(info == fmt::format("rendezvous store h0:29400 reachable again after {} ms (2 reconnect attempt(s))",
                            s.t - last_answer));
  s.run_for(10000);  // heartbeats and waits go on
  CHECK_FALSE(s.has_closed());
  CHECK(s.notices<note::RoundEnded>().empty());
  CHECK(s.m.mode() == RdzvClientMode::Running);
  s.run_until([&] { return s.waiting_on("rdzv/job/wake/" + kToken + "/0"); }, 300);

  s.link = Link::Refused;
  s.run_until([&] { return s.has_closed(); });
  CHECK(s.logs(note::Log::Warn).size() == 2);  // one per outage
}

TEST_CASE("rendezvous client: the reconnect message counts the attempts and the time since the last answer") {
  Sim s;
  s.admit();
  s.link = Link::Refused;
  s.run_until([&] { return s.asked_count<req::Pause>() == 1; });
  // one failed call, a pause: the next connect is attempt 1
  s.link = Link::Up;
  s.run_until([&] { return !s.logs(note::Log::Info).empty(); });
  CHECK(s.logs(note::Log::Info)[0].find("(1 reconnect attempt(s))") != std::string::npos);
}

TEST_CASE("rendezvous client: a longer store_lost_timeout: the round ends at the heartbeat timeout, rejoin after") {
  Sim s(settings(10000));
  s.admit();
  s.link = Link::Refused;
  s.run_until([&] { return !s.notices<note::RoundEnded>().empty(); });
  CHECK(s.notices<note::RoundEnded>()[0].reason ==
        "lost the rendezvous store h0:29400 for 3000 ms; rejoining when it answers again");
  CHECK(s.m.mode() == RdzvClientMode::Idle);
  CHECK_FALSE(s.has_closed());
  CHECK(s.logs(note::Log::Warn)[0].find("reconnecting for up to 10000 ms") != std::string::npos);
  s.send(Kind::Join);  // the supervisor stopped its workers and joins again: kept until the store answers
  s.run_for(3000);
  CHECK(s.notices<note::RoundEnded>().size() == 1);
  CHECK_FALSE(s.has_closed());
  s.link = Link::Up;
  s.run_until([&] { return s.waiting_on("rdzv/job/assign/" + kToken + "/2"); });
  CHECK(s.logs(note::Log::Info).size() == 1);
  CHECK_FALSE(s.has_closed());
}

TEST_CASE("rendezvous client: a longer store_lost_timeout that runs out names it") {
  Sim s(settings(10000));
  s.admit();
  s.link = Link::Refused;
  s.run_until([&] { return s.has_closed(); });
  CHECK(s.notices<note::RoundEnded>().size() == 1);
  CHECK(s.closed().find("no answer for 10.0 s") != std::string::npos);
  CHECK(s.closed().find("now 10 s)") != std::string::npos);
}

TEST_CASE("rendezvous client: who hosted the store, as the error names it") {
  SUBCASE("no host key: the endpoint") {
    Sim s;
    s.keys.erase(kHostKey);
    s.step();
    s.link = Link::Refused;
    s.run_until([&] { return s.has_closed(); });
    CHECK(s.closed().find("It lived in the supervisor that hosts h0:29400, which") != std::string::npos);
  }
  SUBCASE("before a round: host and pid") {
    Sim s;
    s.step();
    s.link = Link::Refused;
    s.run_until([&] { return s.has_closed(); });
    CHECK(s.closed().find("It lived in the supervisor on host h0 (pid 4242), which") != std::string::npos);
  }
  SUBCASE("a malformed host key: a warning, then the endpoint") {
    Sim s;
    s.keys[kHostKey] = "{not json";
    s.step();
    REQUIRE(s.logs(note::Log::Warn).size() == 1);
    CHECK(s.logs(note::Log::Warn)[0].find("rendezvous: ignoring a malformed host key (") == 0);
    CHECK(s.logs(note::Log::Warn)[0].find("): {not json") != std::string::npos);
    CHECK(s.notices<note::FirstContact>().size() == 1);
  }
}

TEST_CASE("rendezvous client: the store back as a new process ends the job") {
  Sim s;
  s.admit();
  s.link = Link::Refused;
  s.run_until([&] { return s.asked_count<req::Pause>() == 2; });
  s.keys = {{kHostKey, host_key("h0:999:00000001", 999)}};
  s.link = Link::Up;
  s.run_until([&] { return s.has_closed(); });
  const auto& c = s.closed();
  CHECK(c.find("the rendezvous store at h0:29400 came back as a new process (host h0, pid 999) after ") == 0);
  CHECK(c.find(" ms: this job's rendezvous state died with the supervisor of node 0 (host h0, pid 4242), so this "
               "node cannot go on: stopping its workers. Restart the job on every node") != std::string::npos);
  CHECK(s.logs(note::Log::Info).empty());
  CHECK(s.m.mode() == RdzvClientMode::Over);
}

TEST_CASE("rendezvous client: the first connection is tried until the join timeout, then a clear error") {
  Sim s;
  s.link = Link::Refused;
  s.run_until([&] { return s.has_closed(); });
  CHECK(s.closed() ==
        "cannot reach the rendezvous store at h0:29400 within the join timeout (10 s): connection refused. Check "
        "--rdzv-endpoint (the host that runs the first supervisor, and its port) and that this node can reach it");
  CHECK(s.first_time<note::Closed>() == 10000);
  CHECK(s.notices<note::FirstContact>().empty());  // finish() has nobody to tell
  REQUIRE(s.asked.size() == 8);                    // 6 tries of 1.5 s, then the 1 s left
  CHECK(s.asked_count<req::Connect>() == 7);       // commands wait until connected
  CHECK(std::holds_alternative<req::TakeCommand>(s.asked[7].second));
  CHECK(std::get<req::Connect>(s.asked[6].second).within == ms(1000));
  CHECK(s.logs(note::Log::Warn).empty());
  CHECK(s.m.mode() == RdzvClientMode::Over);
}

TEST_CASE("rendezvous client: the first connection made late in the join timeout goes on") {
  Sim s;
  s.link = Link::Refused;
  s.run_until([&] { return s.t >= 8000; });
  s.link = Link::Up;
  s.run_until([&] { return !s.notices<note::FirstContact>().empty(); });
  s.send(Kind::Join);
  s.run_until([&] { return s.waiting_on(kAssign1); });
  CHECK_FALSE(s.has_closed());
}

// A signal (SIGTERM: exit 143, SIGINT: 130) or the end of the job reaches the client as finish():
// Leave (or Done) with the supervisor's reason; its continuation must run in every state, or the
// supervisor would wait for it forever.
TEST_CASE("rendezvous client: stopped in each waiting state, the node leaves and its continuation runs") {
  const std::string leave_key = "rdzv/job/leave/" + kToken;
  SUBCASE("idle") {
    Sim s;
    s.step();
    s.send(Kind::Leave, "its job ended with exit code 143");
    s.run_until([&] { return !s.notices<note::RunThen>().empty(); });
    CHECK(s.keys.at(leave_key) == "its job ended with exit code 143");
    CHECK(s.m.mode() == RdzvClientMode::Over);
  }
  SUBCASE("waiting to be admitted") {
    Sim s;
    s.step();
    s.send(Kind::Join);
    s.run_until([&] { return s.waiting_on(kAssign1); });
    s.step();
    s.send(Kind::Leave, "its job ended with exit code 130");
    const long sent = s.t;
    s.run_until([&] { return !s.notices<note::RunThen>().empty(); });
    CHECK(s.keys.at(leave_key) == "its job ended with exit code 130");
    CHECK(s.first_time<note::RunThen>() - sent <= 200 + 2);  // within one WAIT chunk
    CHECK(s.m.mode() == RdzvClientMode::Over);
    CHECK_FALSE(s.has_closed());
  }
  SUBCASE("running") {
    Sim s;
    s.admit();
    s.send(Kind::Leave, "its job ended with exit code 143");
    s.run_until([&] { return !s.notices<note::RunThen>().empty(); });
    CHECK(s.keys.at(leave_key) == "its job ended with exit code 143");
    const long over = s.t;
    s.run_for(3000);
    CHECK(s.asked_count<req::Wait>(over) == 0);
    CHECK(s.asked_count<req::Add>(over) == 0);
  }
  SUBCASE("the store away: nobody to tell, it finishes at once") {
    Sim s;
    s.admit();
    s.link = Link::Refused;
    s.run_until([&] { return s.asked_count<req::Pause>() == 1; });
    s.send(Kind::Leave, "its job ended with exit code 143");
    const long sent = s.t;
    s.run_until([&] { return !s.notices<note::RunThen>().empty(); });
    CHECK(s.first_time<note::RunThen>() - sent <= 200 + 1500);  // the pause, one connect try
    CHECK(s.m.mode() == RdzvClientMode::Over);
    CHECK_FALSE(s.has_closed());
  }
  SUBCASE("over (the job closed): at once") {
    Sim s;
    s.admit();
    s.keys["rdzv/job/wake/" + kToken + "/0"] = wake("closed", true);
    s.run_until([&] { return s.has_closed(); });
    s.send(Kind::Leave, "its job ended with exit code 1");
    s.step();
    CHECK(s.notices<note::RunThen>().size() == 1);
    CHECK_FALSE(s.keys.count(leave_key));
  }
  SUBCASE("done: the success key") {
    Sim s;
    s.admit();
    s.send(Kind::Done);
    s.run_until([&] { return !s.notices<note::RunThen>().empty(); });
    CHECK(s.keys.count("rdzv/job/done/" + kToken));
    CHECK_FALSE(s.keys.count(leave_key));
  }
}

TEST_CASE("rendezvous client: a join the store could not take is sent again after the reconnect") {
  Sim s;
  s.step();
  s.link = Link::Refused;
  s.send(Kind::Join);
  s.step();  // taken: the SET fails
  CHECK(std::holds_alternative<req::Set>(s.next));
  s.step();
  CHECK(s.logs(note::Log::Warn).size() == 1);
  s.link = Link::Up;
  s.run_until([&] { return s.m.mode() == RdzvClientMode::Assign; });
  s.step();  // the heartbeat
  // Each send counts a join number (the failed one was 1).
  CHECK(s.keys.count("rdzv/job/join/" + kToken + "/2"));
  CHECK(s.waiting_on("rdzv/job/assign/" + kToken + "/2"));
}

TEST_CASE("rendezvous client: an assignment it cannot read, or a call that breaks, closes the job") {
  SUBCASE("not JSON") {
    Sim s;
    s.step();
    s.send(Kind::Join);
    s.run_until([&] { return s.waiting_on(kAssign1); });
    s.keys[kAssign1] = "{\"round\": \"zero\"}";
    s.run_until([&] { return s.has_closed(); });
    CHECK(s.closed().find("rendezvous: unexpected answer from h0:29400: ") == 0);
    CHECK(s.m.mode() == RdzvClientMode::Over);
  }
  SUBCASE("another error from the client") {
    Sim s;
    s.step();
    s.send(Kind::Join);
    s.step();
    REQUIRE(std::holds_alternative<req::Set>(s.next));
    s.absorb(s.m.on(ev::Broken{ms(s.t), "poll: bad file descriptor"}));
    CHECK(s.closed() == "rendezvous: unexpected answer from h0:29400: poll: bad file descriptor");
    CHECK(s.m.mode() == RdzvClientMode::Over);
  }
}

TEST_CASE("rendezvous client: an outcome that does not answer the request is a logic error") {
  Sim s;
  CHECK_THROWS_AS(s.m.on(ev::Tick{ms(0)}), std::logic_error);
}

// A Done/Leave taken just before the machine gives up must still finish: the supervisor's exit
// (143 after SIGTERM, 130 after SIGINT) waits for it.
TEST_CASE("rendezvous client: a leave pending when the job closes still finishes") {
  SUBCASE("the store answers again as a new process") {
    Sim s;
    s.admit();
    s.link = Link::Refused;
    s.run_until([&] { return s.asked_count<req::Pause>() == 1; });
    s.send(Kind::Leave, "its job ended with exit code 143");
    s.keys = {{kHostKey, host_key("h0:999:00000001", 999)}};
    s.link = Link::Up;
    s.run_until([&] { return s.has_closed(); });
    CHECK(s.closed().find("came back as a new process") != std::string::npos);
    CHECK(s.notices<note::RunThen>().size() == 1);
  }
  SUBCASE("its SET breaks") {
    Sim s;
    s.admit();
    s.send(Kind::Leave, "its job ended with exit code 130");
    s.run_until([&] { return std::holds_alternative<req::Set>(s.next); });
    s.absorb(s.m.on(ev::Broken{ms(s.t), "poll: bad file descriptor"}));
    CHECK(s.closed() == "rendezvous: unexpected answer from h0:29400: poll: bad file descriptor");
    CHECK(s.notices<note::RunThen>().size() == 1);
  }
}

TEST_CASE("rendezvous client: after a reconnect the first store call names this node (a heartbeat at once)") {
  Sim s;
  s.admit();
  s.run_until([&] { return s.waiting_on("rdzv/job/wake/" + kToken + "/0"); }, 300);
  s.link = Link::Refused;
  s.run_until([&] { return s.asked_count<req::Pause>() == 1; });
  s.link = Link::Up;
  s.run_until([&] { return !s.logs(note::Log::Info).empty(); });  // reconnected
  const auto* add = std::get_if<req::Add>(&s.next);
  REQUIRE(add != nullptr);  // not a WAIT first, nor the next heartbeat a second later
  CHECK(add->key == kHb);
}

TEST_CASE("rendezvous client: the join says how the last attempt ended; the job budget's decisions come back") {
  Sim s;
  s.step();  // Connected
  const RdzvAttemptReport last{.round = 4, .failed = true, .mark = {.checkpoint = 120, .step = 7.5}};
  s.send(Kind::Join, {}, last);
  s.run_until([&] { return s.waiting_on(kAssign1); });
  const auto info = rdzv_join_info(s.keys.at("rdzv/job/join/" + kToken + "/1"));
  CHECK(info.token == kToken);
  CHECK(info.seq == 1);
  CHECK(info.last == last);
  // Admitted to round 5 after a failed round 4: the host's decision, as it made it.
  RestartDecision charged;
  charged.charged = true;
  charged.restarts_left = 2;
  charged.checkpoint = 120;
  RoundAssignment a{.round = 5,
                    .node_rank = 1,
                    .nnodes = 2,
                    .world_size = 4,
                    .rank_base = 2,
                    .nproc = 2,
                    .master_addr = "h0",
                    .master_port = 41000,
                    .hosts = {},
                    .membership_changed = false,
                    .restart = charged};
  s.keys[kAssign1] = rdzv_assign_value(a, 0);
  s.run_until([&] { return !s.notices<note::Assigned>().empty(); });
  CHECK(s.notices<note::Assigned>()[0].assignment.restart == charged);
  // The budget is spent: the close carries the decision (its exit code) with the reason.
  RestartDecision spent;
  spent.verdict = RestartVerdict::NoProgress;
  spent.no_progress_in_a_row = 4;
  s.keys["rdzv/job/wake/" + kToken + "/5"] = rdzv_wake_value("round 5 failed on node(s) n1: no progress", true, spent);
  s.run_until([&] { return s.has_closed(); });
  CHECK(s.closed() == "round 5 failed on node(s) n1: no progress");
  CHECK(s.notices<note::Closed>()[0].restart == spent);
}

TEST_CASE("rendezvous client: a first join's report (no round yet) and an older host's join value") {
  RdzvNodeInfo n{"t:1:2", "a", 2, -1, 1, {.round = -1, .failed = false, .mark = {.checkpoint = 100, .step = {}}}};
  CHECK(rdzv_join_info(rdzv_join_value(n)).last == n.last);
  // Written without "last" (an older ddp-launch): no report.
  auto old = rdzv_join_info(R"({"token":"t","host":"a","nproc":1,"hint":-1,"seq":3})");
  CHECK(old.last == RdzvAttemptReport{});
  CHECK_THROWS(rdzv_join_info(R"({"token":"t"})"));
}
