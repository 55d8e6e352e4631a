#include <doctest/doctest.h>

#include <map>
#include <string>

#include "store/codec.hpp"
#include "store/state.hpp"
#include "unit/store/recording_outbox.hpp"

using namespace ddp::store;

namespace {

using testing::RecordingOutbox;

std::string i64(std::int64_t v) {
  std::string s;
  put_i64(s, v);
  return s;
}
std::string bytes(std::string_view v) {
  std::string s;
  put_bytes(s, v);
  return s;
}
const std::string kStop(1, '\0');
const std::string kCanceled(1, '\1');

Request req(Op op, std::vector<std::string> keys = {}, std::vector<std::string> values = {}, std::int64_t n = 0) {
  Request r;
  r.op = op;
  r.keys = std::move(keys);
  r.values = std::move(values);
  r.number = n;
  return r;
}

struct Fixture {
  StoreState state;
  RecordingOutbox out;
  explicit Fixture(Limits limits = {}, StateOptions options = {}) : state(limits, options) {
    state.connect(1, Dialect::A);
    state.connect(2, Dialect::A);
    state.connect(3, Dialect::C);
    state.connect(4, Dialect::C);
  }
  void run(ConnId c, Request r) { state.handle(c, r, out); }
};

}  // namespace

TEST_CASE("set, get, add and the ASCII counter") {
  Fixture f;
  f.run(1, req(Op::Set, {"/key1"}, {"value1"}));
  CHECK(f.out.take(1).empty());  // SET has no reply
  f.run(1, req(Op::Get, {"/key1"}));
  CHECK(f.out.take(1) == bytes("value1"));
  f.run(1, req(Op::Add, {"/counter"}, {}, 5));
  CHECK(f.out.take(1) == i64(5));
  f.run(1, req(Op::Add, {"/counter"}, {}, -2));
  CHECK(f.out.take(1) == i64(3));
  f.run(1, req(Op::Get, {"/counter"}));
  CHECK(f.out.take(1) == bytes("3"));
  f.run(1, req(Op::Set, {"/empty"}, {""}));
  f.run(1, req(Op::Get, {"/empty"}));
  CHECK(f.out.take(1) == bytes(""));
  f.run(1, req(Op::NumKeys));
  CHECK(f.out.take(1) == i64(3));
  f.run(1, req(Op::Get, {"/absent"}));
  CHECK(f.out.take(1) == bytes(""));
}

TEST_CASE("ADD parses like stoll, refuses non-numbers by closing, wraps on overflow") {
  Fixture f;
  f.run(1, req(Op::Set, {"/n"}, {" 12x"}));
  f.run(1, req(Op::Add, {"/n"}, {}, 1));
  CHECK(f.out.take(1) == i64(13));
  f.run(1, req(Op::Set, {"/word"}, {"abc"}));
  f.run(1, req(Op::Add, {"/word"}, {}, 1));
  REQUIRE(f.out.closed.count(1));
  CHECK(f.out.closed[1].find("not a number") != std::string::npos);
  // Overflow wraps, as every torch server answers (torch2x differential test).
  f.run(2, req(Op::Set, {"/big"}, {"9223372036854775807"}));
  f.run(2, req(Op::Add, {"/big"}, {}, 1));
  CHECK(f.out.take(2) == i64(INT64_MIN));
  CHECK(f.state.value("/big") == "-9223372036854775808");
  f.run(2, req(Op::Add, {"/big"}, {}, -1));
  CHECK(f.out.take(2) == i64(INT64_MAX));
  CHECK_FALSE(f.out.closed.count(2));
}

TEST_CASE("compare_set matches torch 1.13 (spec §5.4)") {
  Fixture f;
  f.run(1, req(Op::CompareSet, {"/cs"}, {"", "first"}));
  CHECK(f.out.take(1) == bytes("first"));
  f.run(1, req(Op::CompareSet, {"/cs"}, {"first", "second"}));
  CHECK(f.out.take(1) == bytes("second"));
  f.run(1, req(Op::CompareSet, {"/cs"}, {"wrong", "third"}));
  CHECK(f.out.take(1) == bytes("second"));
  f.run(1, req(Op::CompareSet, {"/nocs"}, {"exp", "new"}));
  CHECK(f.out.take(1) == bytes("exp"));
  f.run(1, req(Op::NumKeys));
  CHECK(f.out.take(1) == i64(1));
}

TEST_CASE("check, delete_key") {
  Fixture f;
  f.run(1, req(Op::Set, {"/a"}, {"1"}));
  f.run(1, req(Op::Check, {"/a"}));
  CHECK(f.out.take(1) == std::string(1, '\0'));
  f.run(1, req(Op::Check, {"/a", "/zz"}));
  CHECK(f.out.take(1) == std::string(1, '\1'));
  f.run(1, req(Op::Check, {}));
  CHECK(f.out.take(1) == std::string(1, '\0'));
  f.run(1, req(Op::DeleteKey, {"/a"}));
  CHECK(f.out.take(1) == i64(1));
  f.run(1, req(Op::DeleteKey, {"/a"}));
  CHECK(f.out.take(1) == i64(0));
}

TEST_CASE("WAIT answers when every key exists, counting duplicates") {
  Fixture f;
  f.run(1, req(Op::Wait, {"/x", "/y", "/x"}));
  CHECK(f.out.take(1).empty());
  f.run(2, req(Op::Set, {"/x"}, {"1"}));
  CHECK(f.out.take(1).empty());
  f.run(2, req(Op::Set, {"/y"}, {"1"}));
  CHECK(f.out.take(1) == kStop);
  f.run(1, req(Op::Wait, {}));
  CHECK(f.out.take(1) == kStop);
  CHECK(f.state.waiting_connections() == 0);
}

TEST_CASE("a deleted-then-set key still satisfies a wait; delete does not wake") {
  Fixture f;
  f.run(1, req(Op::Wait, {"/late"}));
  f.run(2, req(Op::DeleteKey, {"/late"}));
  f.out.take(2);
  CHECK(f.out.take(1).empty());
  f.run(2, req(Op::Set, {"/late"}, {"v"}));
  CHECK(f.out.take(1) == kStop);
}

TEST_CASE("stale WAIT of a 1.13 client is dropped when its next request arrives (spec §5.6)") {
  Fixture f;
  f.run(1, req(Op::Set, {"/counter"}, {"3"}));
  f.run(1, req(Op::Wait, {"/nokey"}));  // client times out via SO_RCVTIMEO, says nothing
  f.run(1, req(Op::NumKeys));
  CHECK(f.out.take(1) == i64(1));
  f.run(2, req(Op::Set, {"/nokey"}, {"v"}));
  f.run(1, req(Op::Add, {"/counter"}, {}, 0));
  CHECK(f.out.take(1) == i64(3));  // no stray STOP_WAITING in front
}

TEST_CASE("without the mitigation the stray STOP_WAITING corrupts the stream, as in torch") {
  StateOptions torch_like;
  torch_like.drop_stale_waits = false;
  Fixture f({}, torch_like);
  f.run(1, req(Op::Wait, {"/nokey"}));
  f.run(2, req(Op::Set, {"/nokey"}, {"v"}));
  f.run(1, req(Op::NumKeys));
  CHECK(f.out.take(1) == kStop + i64(1));
}

TEST_CASE("a WAIT after a timed-out WAIT: dropped by default, left live without the mitigation as in torch") {
  Fixture mitigated;
  mitigated.run(1, req(Op::Wait, {"/nokey"}));  // the client times out and says nothing
  mitigated.run(1, req(Op::Wait, {"/none_missing"}));
  mitigated.run(2, req(Op::Set, {"/nokey"}, {"v"}));
  CHECK(mitigated.out.take(1).empty());
  mitigated.run(2, req(Op::Set, {"/none_missing"}, {"v"}));
  CHECK(mitigated.out.take(1) == kStop);

  StateOptions torch_like;
  torch_like.drop_stale_waits = false;
  Fixture f({}, torch_like);
  f.run(1, req(Op::Set, {"/counter"}, {"3"}));
  f.run(1, req(Op::Wait, {"/nokey"}));
  f.run(1, req(Op::Wait, {"/counter"}));  // every key exists: answered at once, old wait kept
  CHECK(f.out.take(1) == kStop);
  f.run(2, req(Op::Set, {"/nokey"}, {"v"}));
  CHECK(f.out.take(1) == kStop);  // the stray byte torch sends too (differential test, torch113)

  // torch overwrites the connection's count, so the old registration releases the new WAIT early.
  f.run(1, req(Op::Wait, {"/a"}));
  f.run(1, req(Op::Wait, {"/b"}));
  f.run(2, req(Op::Set, {"/a"}, {"v"}));
  CHECK(f.out.take(1) == kStop);
  f.run(2, req(Op::Set, {"/b"}, {"v"}));
  CHECK(f.out.take(1).empty());  // torch's count went below zero: nothing more is sent
}

TEST_CASE("dialect C: CANCEL_WAIT answers 01, drops the wait, works with nothing pending") {
  Fixture f;
  f.run(3, req(Op::Wait, {"/never"}));
  f.run(3, req(Op::CancelWait));
  CHECK(f.out.take(3) == kCanceled);
  f.run(4, req(Op::Set, {"/never"}, {"1"}));
  CHECK(f.out.take(3).empty());
  f.run(3, req(Op::CancelWait));
  CHECK(f.out.take(3) == kCanceled);
}

TEST_CASE("PING echoes the nonce even while a wait is pending") {
  Fixture f;
  f.run(3, req(Op::Wait, {"/k"}));
  Request ping = req(Op::Ping);
  ping.u32 = 0x7f57;
  f.state.handle(3, ping, f.out);
  std::string nonce;
  put_u32(nonce, 0x7f57);
  CHECK(f.out.take(3) == nonce);
  f.run(4, req(Op::Set, {"/k"}, {"1"}));
  CHECK(f.out.take(3) == kStop);
}

TEST_CASE("append, multi_get, multi_set, list_keys") {
  Fixture f;
  f.run(3, req(Op::Wait, {"/ap"}));
  f.run(4, req(Op::Append, {"/ap"}, {"ab"}));
  CHECK(f.out.take(3) == kStop);
  f.run(4, req(Op::Append, {"/ap"}, {"cd"}));
  f.run(4, req(Op::MultiSet, {"/m1", "/m2"}, {"x", "yy"}));
  f.run(4, req(Op::MultiGet, {"/m1", "/m2", "/ap", "/none"}));
  CHECK(f.out.take(4) == bytes("x") + bytes("yy") + bytes("abcd") + bytes(""));
  f.run(4, req(Op::ListKeys));
  auto listed = f.out.take(4);
  CHECK(listed.substr(0, 8) == i64(3));
  CHECK(listed.size() == 8 + 3 * 8 + 3 + 3 + 3);
}

TEST_CASE("barrier: counts like ADD, releases at world size, counts never reset (torch 2.14)") {
  Fixture f;
  f.run(3, req(Op::Barrier, {"/bar"}, {}, 2));
  CHECK(f.out.take(3).empty());
  f.run(4, req(Op::Barrier, {"/bar"}, {}, 2));
  CHECK(f.out.take(4) == kStop);
  CHECK(f.out.take(3) == kStop);
  CHECK(f.state.value("/bar") == "2");
  f.run(3, req(Op::Barrier, {"/bar"}, {}, 2));  // count 3 >= 2: passes at once
  CHECK(f.out.take(3) == kStop);
  // any write to the key releases a parked barrier
  f.run(3, req(Op::Barrier, {"/b2"}, {}, 10));
  f.run(4, req(Op::Add, {"/b2"}, {}, 1));
  CHECK(f.out.take(3) == kStop);
  f.run(3, req(Op::Barrier, {"/b3"}, {}, 0));
  CHECK(f.out.take(3) == kStop);
}

TEST_CASE("queues: push wakes one waiting pop, non-empty queue counts as present") {
  Fixture f;
  f.run(3, req(Op::Wait, {"/q"}));
  f.run(4, req(Op::Wait, {"/q"}));
  f.run(1, req(Op::QueuePush, {"/q"}, {"a"}));
  auto woke3 = f.out.take(3);
  auto woke4 = f.out.take(4);
  CHECK(woke3 + woke4 == kStop);  // exactly one woken
  f.run(1, req(Op::Check, {"/q"}));
  CHECK(f.out.take(1) == std::string(1, '\0'));
  f.run(1, req(Op::QueueLen, {"/q"}));
  CHECK(f.out.take(1) == i64(1));
  f.run(1, req(Op::QueuePop, {"/q"}));
  CHECK(f.out.take(1) == i64(1) + bytes("a"));
  f.run(1, req(Op::QueuePop, {"/q"}));
  CHECK(f.out.take(1) == i64(0));
  f.run(1, req(Op::QueuePush, {"/q"}, {"b"}));  // wakes the other waiter
  CHECK(f.out.take(3) + f.out.take(4) == kStop);
}

TEST_CASE("WATCH_KEY pushes created, updated, deleted") {
  Fixture f;
  f.run(2, req(Op::WatchKey, {"/w"}));
  CHECK(f.out.take(2) == std::string(1, '\3'));
  f.run(1, req(Op::Set, {"/w"}, {"x"}));
  CHECK(f.out.take(2) == std::string(1, '\1') + bytes("/w") + bytes("") + bytes("x"));
  f.run(1, req(Op::Set, {"/w"}, {"y"}));
  CHECK(f.out.take(2) == std::string(1, '\0') + bytes("/w") + bytes("x") + bytes("y"));
  f.run(1, req(Op::DeleteKey, {"/w"}));
  CHECK(f.out.take(2) == std::string(1, '\2') + bytes("/w") + bytes("y") + bytes(""));
}

TEST_CASE("a client that vanishes while waiting does not disturb the others") {
  Fixture f;
  f.run(1, req(Op::Wait, {"/k"}));
  f.run(3, req(Op::Wait, {"/k"}));
  f.state.disconnect(1);
  f.run(4, req(Op::Set, {"/k"}, {"v"}));
  CHECK(f.out.take(3) == kStop);
  CHECK(f.out.sent[1].empty());
}

TEST_CASE("cancelled waits do not pile up on a key") {
  Fixture f;
  for (int i = 0; i < 1000; ++i) {
    f.run(3, req(Op::Wait, {"/never"}));
    f.run(3, req(Op::CancelWait));
  }
  CHECK(f.state.waiting_connections() == 0);
  f.run(4, req(Op::Set, {"/never"}, {"1"}));
  CHECK(f.out.take(3) == std::string(1000, '\1'));
}

TEST_CASE("the total-bytes limit closes the writer only") {
  Limits limits;
  limits.max_total_bytes = 32;
  Fixture f(limits);
  f.run(1, req(Op::Set, {"/a"}, {"0123456789"}));
  f.run(1, req(Op::Set, {"/b"}, {std::string(40, 'x')}));
  REQUIRE(f.out.closed.count(1));
  CHECK(f.out.closed[1].find("limit of 32") != std::string::npos);
  CHECK(f.state.total_bytes() == 12);
  f.run(2, req(Op::Get, {"/a"}));
  CHECK(f.out.take(2) == bytes("0123456789"));
}

TEST_CASE("reset gives an empty store for the next attempt") {
  Fixture f;
  f.run(1, req(Op::Set, {"/default_pg/0//cpu//0/0"}, {"addr"}));
  f.run(3, req(Op::Wait, {"/x"}));
  f.state.reset();
  CHECK(f.state.num_keys() == 0);
  CHECK(f.state.total_bytes() == 0);
  CHECK(f.state.waiting_connections() == 0);
  f.run(4, req(Op::Set, {"/x"}, {"1"}));
  CHECK(f.out.take(3).empty());
}

TEST_CASE("a second VALIDATE closes the connection") {
  Fixture f;
  f.run(3, req(Op::Validate));
  CHECK(f.out.closed.count(3));
}

TEST_CASE("a queue push passes over a multi-key waiter that still misses keys (libuv order)") {
  Fixture f;
  f.run(3, req(Op::Wait, {"/q", "/other"}));  // consumes /q but still needs /other
  f.run(4, req(Op::Wait, {"/q"}));
  f.run(1, req(Op::QueuePush, {"/q"}, {"a"}));
  CHECK(f.out.take(4) == kStop);
  CHECK(f.out.take(3).empty());
  f.run(1, req(Op::Set, {"/other"}, {"1"}));
  CHECK(f.out.take(3) == kStop);
}

TEST_CASE("the key observer sees every client write with the key's new value") {
  Fixture f;
  std::vector<std::pair<std::string, std::string>> seen;
  f.state.set_key_observer([&](std::string_view k, std::string_view v) { seen.emplace_back(k, v); });
  f.run(1, req(Op::Add, {"init/"}, {}, 1));
  f.run(1, req(Op::Add, {"init/"}, {}, 1));
  f.run(3, req(Op::Set, {"/k"}, {"v"}));
  f.run(3, req(Op::Append, {"/k"}, {"w"}));
  f.run(1, req(Op::Get, {"/k"}));  // reads are not reported
  CHECK(seen == std::vector<std::pair<std::string, std::string>>{
                    {"init/", "1"}, {"init/", "2"}, {"/k", "v"}, {"/k", "vw"}});
}

TEST_CASE("the connection observer sees every key a request names, and each connection's end once") {
  Fixture f;
  std::vector<std::pair<ConnId, std::string>> named;
  std::vector<ConnId> closed;
  f.state.set_connection_observer({[&](ConnId c, std::string_view k) { named.emplace_back(c, k); },
                                   [&](ConnId c) { closed.push_back(c); }});
  f.run(3, req(Op::Add, {"rdzv/x/hb/t1"}, {}, 1));
  f.run(4, req(Op::Wait, {"rdzv/x/wake/t2/0", "rdzv/x/other"}));  // reads and waits too
  f.run(3, req(Op::Ping));                                         // no key: nothing to report
  CHECK(named == std::vector<std::pair<ConnId, std::string>>{
                     {3, "rdzv/x/hb/t1"}, {4, "rdzv/x/wake/t2/0"}, {4, "rdzv/x/other"}});
  f.state.disconnect(4);
  f.state.disconnect(4);  // already gone (the server's close, then its drop): not reported again
  f.state.disconnect(9);  // never connected
  CHECK(closed == std::vector<ConnId>{4});
}
