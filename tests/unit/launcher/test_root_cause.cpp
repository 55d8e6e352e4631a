// Root-cause attribution: events fed to the SupervisorMachine (exits with their reap times), then
// each failed rank's own record (error file time, lost-peer evidence) to attribute_failures.
#include <doctest/doctest.h>

#include <csignal>

#include "common/peer_failure.hpp"
#include "launcher/supervisor/root_cause.hpp"
#include "launcher/supervisor/supervisor_machine.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;

namespace {

input::RankExited exited(int local_rank, double time, int code, int signal = 0) {
  return {RankExit{local_rank, 1000 + local_rank, code, signal, time}};
}

SupervisorMachine started(int nproc) {
  SupervisorPolicy p;
  p.nproc = nproc;
  p.shutdown_grace = 5000ms;
  SupervisorMachine m(p);
  m.on(input::Start{});
  return m;
}

FailureRecord own(double recorded_at) { return {recorded_at, false, std::nullopt}; }
FailureRecord peer(double recorded_at) { return {recorded_at, true, std::nullopt}; }
FailureRecord none() { return {std::nullopt, false, std::nullopt}; }

std::vector<int> ranks_of(const std::vector<AttributedFailure>& v) {
  std::vector<int> out;
  for (const auto& a : v) out.push_back(a.exit.local_rank);
  return out;
}

}  // namespace

TEST_CASE("same reap pass: the rank that lost its peer is reaped first, the one that failed wins") {
  // The C++ SDK case: rank 1 throws, exits; rank 0's gloo pair sees "Connection closed by peer" and
  // exits too before the supervisor runs; one pass reaps both in rank order.
  auto m = started(2);
  m.on(exited(0, 100.0, 1));
  m.on(exited(1, 100.0, 1));
  REQUIRE(m.state() == GroupState::Failed);
  REQUIRE(m.teardown_began() == 100.0);
  CHECK_FALSE(m.failures()[1].after_teardown);  // same pass: it died before our signal
  auto a = attribute_failures(m.failures(), {peer(99.95), own(99.90)}, m.teardown_began());
  CHECK(ranks_of(a) == std::vector<int>{1, 0});
  CHECK(a[0].role == FailureRole::Original);
  CHECK(a[0].failed_at == doctest::Approx(99.90));
  CHECK(a[1].role == FailureRole::LostPeer);
}

TEST_CASE("evidence beats time: a lost peer recorded first still loses to an original failure") {
  auto m = started(2);
  m.on(exited(0, 50.0, 1));
  m.on(exited(1, 50.0, 1));
  auto a = attribute_failures(m.failures(), {peer(49.0), own(49.5)}, m.teardown_began());
  CHECK(ranks_of(a) == std::vector<int>{1, 0});
}

TEST_CASE("equal evidence: the earliest failure wins; equal times keep the reap order") {
  auto m = started(3);
  m.on(exited(0, 10.0, 1));
  m.on(exited(1, 10.0, 1));
  m.on(exited(2, 10.0, 1));
  CHECK(ranks_of(attribute_failures(m.failures(), {own(9.8), own(9.7), own(9.9)}, m.teardown_began())) ==
        std::vector<int>{1, 0, 2});
  CHECK(ranks_of(attribute_failures(m.failures(), {none(), none(), none()}, m.teardown_began())) ==
        std::vector<int>{0, 1, 2});
  // No error file: the reap time bounds the failure from above; a record dates it earlier.
  CHECK(ranks_of(attribute_failures(m.failures(), {none(), none(), own(9.99)}, m.teardown_began())) ==
        std::vector<int>{2, 0, 1});
}

TEST_CASE("a signal we did not send is an original failure; one that lost its peer is not") {
  auto m = started(2);
  m.on(exited(0, 5.0, 1));
  m.on(exited(1, 5.0, 0, SIGSEGV));
  auto a = attribute_failures(m.failures(), {peer(4.99), none()}, m.teardown_began());
  CHECK(ranks_of(a) == std::vector<int>{1, 0});
  CHECK(a[0].role == FailureRole::Original);
}

TEST_CASE("the rank that failed first but exits last: its error file predates the teardown") {
  // Python: rank 1 raises (@record writes its file at 19.0), closes its process group and is slow to
  // exit; rank 0 fails on the closed connection and is reaped first (20.0), which begins the
  // teardown; our SIGTERM then kills rank 1 in its shutdown (20.3).
  auto m = started(2);
  m.on(exited(0, 20.0, 1));
  m.on(exited(1, 20.3, 0, SIGTERM));
  REQUIRE(m.failures()[1].after_teardown);
  REQUIRE(m.failures()[1].by_teardown_signal);
  auto a = attribute_failures(m.failures(), {peer(19.9), own(19.0)}, m.teardown_began());
  CHECK(ranks_of(a) == std::vector<int>{1, 0});
  CHECK(a[0].role == FailureRole::Original);
  CHECK(a[0].exit.signal == SIGTERM);
  // Without its error file it is just a rank our teardown stopped: the one that lost a peer leads.
  a = attribute_failures(m.failures(), {peer(19.9), none()}, m.teardown_began());
  CHECK(ranks_of(a) == std::vector<int>{0, 1});
  CHECK(a[1].role == FailureRole::Teardown);
}

TEST_CASE("the torch elastic timer's signal is the rank's own failure, dated when it was sent") {
  // FileTimerClient(path, signal=SIGTERM): rank 1's expires() deadline passes, the timer sends SIGTERM
  // at 40.0; rank 1 is slow to die, rank 0 fails on the closed connection and is reaped first (40.02),
  // which begins the teardown (SIGTERM too); rank 1 is reaped at 40.3.
  auto m = started(2);
  m.on(exited(0, 40.02, 1));
  m.on(exited(1, 40.3, 0, SIGTERM));
  REQUIRE(m.failures()[1].by_teardown_signal);
  FailureRecord timer{std::nullopt, false, 40.0};
  auto a = attribute_failures(m.failures(), {peer(40.01), timer}, m.teardown_began());
  CHECK(ranks_of(a) == std::vector<int>{1, 0});
  CHECK(a[0].role == FailureRole::Original);
  CHECK(a[0].failed_at == doctest::Approx(40.0));
  // Without the timer's record it would pass for a rank our teardown stopped.
  CHECK(ranks_of(attribute_failures(m.failures(), {peer(40.01), none()}, m.teardown_began())) ==
        std::vector<int>{0, 1});
  // Its last words about a lost peer do not demote it: the timer, not a peer, ended it.
  a = attribute_failures(m.failures(), {peer(40.01), FailureRecord{std::nullopt, true, 40.0}}, m.teardown_began());
  CHECK(a[0].exit.local_rank == 1);
  CHECK(a[0].role == FailureRole::Original);
  // An error file written earlier still dates it earlier.
  a = attribute_failures(m.failures(), {peer(40.01), FailureRecord{39.5, false, 40.0}}, m.teardown_began());
  CHECK(a[0].failed_at == doctest::Approx(39.5));
}

TEST_CASE("a timer that fired only after the teardown began is the teardown's consequence") {
  // Rank 0 fails (50.0); rank 1, waiting for it inside expires(), misses its deadline during the
  // grace period and the timer kills it at 51.0.
  auto m = started(2);
  m.on(exited(0, 50.0, 3));
  m.on(exited(1, 51.01, 0, SIGKILL));
  auto a = attribute_failures(m.failures(), {own(49.99), FailureRecord{std::nullopt, false, 51.0}}, m.teardown_began());
  CHECK(ranks_of(a) == std::vector<int>{0, 1});
  CHECK(a[1].role == FailureRole::Teardown);
}

TEST_CASE("ranks stopped by the teardown come after every rank that failed on its own") {
  auto m = started(3);
  m.on(exited(2, 30.0, 1));
  m.on(exited(0, 30.2, 0, SIGTERM));
  // A record written after the teardown began (a SIGTERM handler that raises): a consequence.
  m.on(exited(1, 30.4, 1));
  auto a = attribute_failures(m.failures(), {peer(29.99), none(), own(30.35)}, m.teardown_began());
  CHECK(ranks_of(a) == std::vector<int>{2, 0, 1});
  CHECK(a[0].role == FailureRole::LostPeer);  // the rank that really failed is on another node
  CHECK(a[1].role == FailureRole::Teardown);
  CHECK(a[2].role == FailureRole::Teardown);
}

TEST_CASE("within the window after the teardown began, an exit without a record still competes") {
  auto m = started(2);
  m.on(exited(0, 40.0, 1));
  m.on(exited(1, 40.05, 1));  // next reap pass, 50 ms later: it was already on its way out
  auto a = attribute_failures(m.failures(), {peer(39.99), none()}, m.teardown_began());
  CHECK(ranks_of(a) == std::vector<int>{1, 0});
  // 500 ms later it is the teardown's doing.
  auto late = started(2);
  late.on(exited(0, 40.0, 1));
  late.on(exited(1, 40.5, 1));
  CHECK(ranks_of(attribute_failures(late.failures(), {peer(39.99), none()}, late.teardown_began())) ==
        std::vector<int>{0, 1});
}

TEST_CASE("a straggler killed after the grace, and signals of a handled-signal stop, are the teardown's") {
  auto m = started(2);
  m.on(exited(1, 60.0, 3));
  m.on(input::GraceExpired{0});
  m.on(exited(0, 65.0, 0, SIGKILL));
  CHECK(m.failures()[1].by_teardown_signal);
  auto a = attribute_failures(m.failures(), {none(), none()}, m.teardown_began());
  CHECK(ranks_of(a) == std::vector<int>{1, 0});
  CHECK(a[1].role == FailureRole::Teardown);

  auto s = started(2);
  s.on(input::SignalReceived{SIGINT});
  s.on(exited(0, 70.0, 0, SIGINT));
  s.on(exited(1, 70.0, 0, SIGINT));
  CHECK_FALSE(s.teardown_began());
  CHECK(s.failures()[0].by_teardown_signal);
  CHECK(attribute_failures(s.failures(), {none(), none()}, s.teardown_began())[0].role == FailureRole::Teardown);
}

TEST_CASE("a new attempt forgets the last one's teardown") {
  SupervisorPolicy p;
  p.nproc = 2;
  p.max_restarts = 1;
  SupervisorMachine m(p);
  m.on(input::Start{});
  m.on(exited(0, 1.0, 1));
  m.on(exited(1, 1.5, 0, SIGTERM));
  m.on(input::BackoffExpired{1});
  REQUIRE(m.attempt() == 1);
  CHECK(m.failures().empty());
  CHECK_FALSE(m.teardown_began());
  m.on(exited(1, 2.0, 0, SIGTERM));  // an outside SIGTERM first: not ours
  CHECK_FALSE(m.failures()[0].by_teardown_signal);
}

TEST_CASE("lost-peer evidence: the error file's mark, else its message, else the last stderr lines") {
  ErrorFileRecord closed{
      "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by "
      "peer [127.0.0.1]:41235",
      std::nullopt};
  CHECK(record_says_lost_peer(closed, {}));
  closed.peer_failure = false;  // the writer knows better than the text
  CHECK_FALSE(record_says_lost_peer(closed, {}));
  CHECK(record_says_lost_peer(ErrorFileRecord{"c10::Error: boom", true}, {}));
  CHECK_FALSE(record_says_lost_peer(ErrorFileRecord{"ValueError: bad batch", std::nullopt},
                                    {"RuntimeError: Connection reset by peer"}));  // the file decides
  CHECK(record_says_lost_peer(std::nullopt, {"Traceback (most recent call last):", "  File \"t.py\", line 3",
                                             "RuntimeError: [pair.cc:589] Read error [127.0.0.1]:2: Connection reset "
                                             "by peer"}));
  CHECK_FALSE(record_says_lost_peer(std::nullopt, {"ValueError: bad batch at step 7"}));
  std::vector<std::string> old_mention{
      "warning: connection reset by peer, retrying the download", "1", "2", "3", "4", "5", "ValueError: bad batch"};
  CHECK_FALSE(record_says_lost_peer(std::nullopt, old_mention));  // only the last lines count
}

TEST_CASE("mentions_lost_peer: gloo, errno, torch store and NCCL wordings; not ordinary errors") {
  using ddp::mentions_lost_peer;
  CHECK(mentions_lost_peer("Connection closed by peer [127.0.0.1]:1"));
  CHECK(mentions_lost_peer("write: Broken pipe"));
  CHECK(mentions_lost_peer("ECONNRESET"));
  CHECK(mentions_lost_peer("RuntimeError: Socket Timeout"));
  CHECK(mentions_lost_peer("Failed to recv, got 0 bytes. Connection was likely closed."));
  CHECK(mentions_lost_peer("NCCL error: remote process exited or there was a network error"));
  CHECK_FALSE(mentions_lost_peer("std::runtime_error: injected failure after step 3"));
  CHECK_FALSE(mentions_lost_peer("CUDA out of memory"));
}

TEST_CASE("error file: torchrun's layout with the mark, the older flat layout, garbage") {
  auto r = parse_error_file(
      R"({"message": {"message": "RuntimeError: x", "extraInfo": {"py_callstack": "Traceback...", "timestamp": "1",
          "peer_failure": true}}})");
  CHECK(r.message == "RuntimeError: x\nTraceback...");
  CHECK(r.peer_failure == true);
  auto flat = parse_error_file(R"({"message": "ValueError: y", "timestamp": 1})");
  CHECK(flat.message == "ValueError: y");
  CHECK_FALSE(flat.peer_failure);
  CHECK_THROWS(parse_error_file("{not json"));
  CHECK_THROWS(parse_error_file(R"({"no": "message"})"));
}

TEST_CASE("an error file that is not valid JSON is quoted whole: a NUL or a bad byte cuts nothing off") {
  const char kRaw[] = "{\"message\": \"before\0after the NUL \xff and more\"}";
  const std::string raw(kRaw, sizeof kRaw - 1);
  auto r = error_file_record(raw, "/run/attempt_0/0/error.json");
  CHECK(r.message.find("/run/attempt_0/0/error.json is not a torchelastic error record") != std::string::npos);
  CHECK(r.message.find(raw) != std::string::npos);
  CHECK(r.message.find("last read") == std::string::npos);
  CHECK(!r.peer_failure);
  auto good = error_file_record(R"({"message": "RuntimeError: x\u0000y"})", "e.json");
  CHECK(good.message == std::string("RuntimeError: x\0y", 17));
}
