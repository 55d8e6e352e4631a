// torch's elastic file timer, the pure parts (launcher/hang/file_timer.hpp): the requests torch 1.13's
// FileTimerClient writes, the FIFO's byte stream, the deadline table, which rank a pid is.
#include <doctest/doctest.h>

#include <string>

#include "launcher/hang/file_timer.hpp"

using namespace ddp::launcher;

TEST_CASE("file timer: on only with TORCHELASTIC_ENABLE_FILE_TIMER=1; the FIFO in the run directory unless named") {
  CHECK_FALSE(file_timer_setup({}, "/r").enabled);
  CHECK(file_timer_setup({}, "/r").warning.empty());
  // torch's agent exports TORCHELASTIC_TIMER_FILE only to what it inherits anyway: no FIFO without 1.
  CHECK_FALSE(file_timer_setup({{"TORCHELASTIC_TIMER_FILE", "/x/fifo"}}, "/r").enabled);

  auto on = file_timer_setup({{"TORCHELASTIC_ENABLE_FILE_TIMER", "1"}}, "/runs/r1");
  CHECK(on.enabled);
  CHECK(on.path == "/runs/r1/torchelastic_timer.fifo");
  CHECK_FALSE(on.path_from_env);

  auto named =
      file_timer_setup({{"TORCHELASTIC_ENABLE_FILE_TIMER", "1"}, {"TORCHELASTIC_TIMER_FILE", "/x/fifo"}}, "/r");
  CHECK(named.path == "/x/fifo");
  CHECK(named.path_from_env);
  // An empty value names no file (torch would try mkfifo("") and fail).
  auto empty = file_timer_setup({{"TORCHELASTIC_ENABLE_FILE_TIMER", "1"}, {"TORCHELASTIC_TIMER_FILE", ""}}, "/r");
  CHECK(empty.path == "/r/torchelastic_timer.fifo");

  for (const char* v : {"true", "0", "yes", ""}) {
    CAPTURE(v);
    auto off = file_timer_setup({{"TORCHELASTIC_ENABLE_FILE_TIMER", v}}, "/r");
    CHECK_FALSE(off.enabled);
    CHECK(off.warning.find("is not 1") != std::string::npos);
    CHECK(off.warning.find("TORCHELASTIC_ENABLE_FILE_TIMER=1") != std::string::npos);
  }
}

TEST_CASE("file timer: torch 1.13's acquire and release lines parse") {
  // Verbatim from FileTimerRequest.to_json() (torch 1.13): acquire, then release.
  auto acquire = parse_timer_request(
      R"({"version": 1, "pid": 4242, "scope_id": "/w/train.py#12", "expiration_time": 1796318085.25, "signal": 9})");
  REQUIRE(acquire.request);
  CHECK(acquire.request->pid == 4242);
  CHECK(acquire.request->scope_id == "/w/train.py#12");
  CHECK(acquire.request->expiration_time == 1796318085.25);
  CHECK(acquire.request->signal == 9);
  CHECK_FALSE(acquire.request->release());

  auto release = parse_timer_request(
      R"({"version": 1, "pid": 4242, "scope_id": "/w/train.py#12", "expiration_time": -1, "signal": 0})");
  REQUIRE(release.request);
  CHECK(release.request->release());
}

TEST_CASE("file timer: a malformed request is an error naming the field, with the sender's pid when known") {
  struct Case {
    const char* line;
    const char* error;
    bool has_pid;
  };
  for (const auto& c : {
           Case{"garbage", "not a JSON object", false},
           Case{"[1, 2]", "not a JSON object", false},
           Case{"{\"pid\": 7", "not a JSON object", false},
           Case{R"({"scope_id": "a", "expiration_time": 1, "signal": 9})", "\"pid\" is missing", false},
           Case{R"({"pid": "7", "scope_id": "a", "expiration_time": 1, "signal": 9})", "\"pid\" is not an integer",
                false},
           Case{R"({"pid": 0, "scope_id": "a", "expiration_time": 1, "signal": 9})", "\"pid\" is 0, outside", false},
           Case{R"({"pid": -5, "scope_id": "a", "expiration_time": 1, "signal": 9})", "outside", false},
           Case{R"({"pid": 99999999999999999999, "scope_id": "a", "expiration_time": 1, "signal": 9})", "pid", false},
           Case{R"({"pid": 7, "expiration_time": 1, "signal": 9})", "\"scope_id\"", true},
           Case{R"({"pid": 7, "scope_id": 3, "expiration_time": 1, "signal": 9})", "\"scope_id\"", true},
           Case{R"({"pid": 7, "scope_id": "a", "expiration_time": "soon", "signal": 9})", "\"expiration_time\"", true},
           Case{R"({"pid": 7, "scope_id": "a", "expiration_time": 1})", "\"signal\" is missing", true},
           Case{R"({"pid": 7, "scope_id": "a", "expiration_time": 1, "signal": 65})", "\"signal\" is 65, outside",
                true},
           Case{R"({"pid": 7, "scope_id": "a", "expiration_time": 1, "signal": 9.5})", "\"signal\" is not an integer",
                true},
           Case{"{\"pid\": 7, \"scope_id\": \"\xff\xfe\", \"expiration_time\": 1, \"signal\": 9}", "not a JSON object",
                false},
       }) {
    std::string line = c.line;
    CAPTURE(line);
    auto p = parse_timer_request(line);
    CHECK_FALSE(p.request);
    CHECK(p.error.find(c.error) != std::string::npos);
    CHECK(p.pid.has_value() == c.has_pid);
    if (c.has_pid) CHECK(*p.pid == 7);
  }
  // torch's rule: a signal ≤ 0 is valid (the timer expires without killing).
  auto quiet = parse_timer_request(R"({"pid": 7, "scope_id": "a", "expiration_time": 1, "signal": -3})");
  REQUIRE(quiet.request);
  CHECK(quiet.request->signal == -3);
}

TEST_CASE("file timer: the FIFO's bytes become lines, whatever the chunks; an endless line is cut, not buffered") {
  TimerLineSplitter s(16);
  auto a = s.feed("{\"a\":1}\n{\"b\"");
  REQUIRE(a.size() == 1);
  CHECK(a[0].text == "{\"a\":1}");
  auto b = s.feed(":2}\n\n");  // the empty line is nothing
  REQUIRE(b.size() == 1);
  CHECK(b[0].text == "{\"b\":2}");
  CHECK(s.buffered() == 0);

  // Over the limit: one oversized line, its rest skipped across chunks, the next line intact.
  auto c = s.feed(std::string(20, 'x'));
  REQUIRE(c.size() == 1);
  CHECK(c[0].oversized);
  CHECK(c[0].text.size() <= 120);
  CHECK(s.feed(std::string(100000, 'y')).empty());
  CHECK(s.buffered() == 0);
  auto d = s.feed("zz\nok\n");
  REQUIRE(d.size() == 1);
  CHECK(d[0].text == "ok");
  CHECK_FALSE(d[0].oversized);
}

namespace {
FileTimerRequest req(pid_t pid, std::string scope, double when, int signal = 9) {
  return FileTimerRequest{pid, std::move(scope), when, signal};
}
}  // namespace

TEST_CASE("file timer table: one deadline per (pid, scope); release cancels; the earliest is known") {
  FileTimerTable t;
  CHECK_FALSE(t.earliest());
  CHECK(t.apply(req(10, "a", 105), 0));
  CHECK(t.apply(req(11, "a", 103), 1));
  CHECK(t.apply(req(10, "b", 104), 0));
  CHECK(t.size() == 3);
  CHECK(*t.earliest() == 103);
  CHECK(t.apply(req(11, "a", 108), 1));  // the same scope again: replaced, not added
  CHECK(t.size() == 3);
  CHECK(*t.earliest() == 104);
  CHECK(t.apply(req(10, "b", -1, 0), 0));  // release
  CHECK(*t.earliest() == 105);
  CHECK(t.apply(req(10, "nope", -1, 0), 0));  // releasing what is not there: nothing
  CHECK(t.size() == 2);
  CHECK(t.take_expired(104.9).empty());

  auto due = t.take_expired(105);
  REQUIRE(due.size() == 1);
  CHECK(due[0].pid == 10);
  CHECK(due[0].rank == 0);
  CHECK(due[0].scope_id == "a");
  CHECK(due[0].signal == 9);
  CHECK(*t.earliest() == 108);
  t.forget(11);
  CHECK(t.size() == 0);
  CHECK_FALSE(t.earliest());
}

TEST_CASE("file timer table: of a pid's expired timers, the earliest with a signal; all of the pid's go") {
  FileTimerTable t;
  t.apply(req(10, "quiet", 100, 0), 2);
  t.apply(req(10, "late", 102, 15), 2);
  t.apply(req(10, "early", 101, 9), 2);
  t.apply(req(10, "future", 500, 9), 2);
  auto due = t.take_expired(103);
  REQUIRE(due.size() == 1);
  CHECK(due[0].scope_id == "early");
  CHECK(due[0].signal == 9);
  CHECK(t.size() == 0);  // torch clears every timer of a reaped pid

  t.apply(req(20, "q", 100, 0), 1);
  auto quiet = t.take_expired(100);
  REQUIRE(quiet.size() == 1);
  CHECK(quiet[0].signal == 0);  // expired, but the worker asked for no signal
}

TEST_CASE("file timer table: full means refused, never unbounded; clear empties it") {
  FileTimerTable t(2);
  CHECK(t.apply(req(1, "a", 10), 0));
  CHECK(t.apply(req(1, "b", 11), 0));
  CHECK_FALSE(t.apply(req(1, "c", 12), 0));
  CHECK(t.apply(req(1, "a", 13), 0));  // replacing needs no room
  CHECK(t.size() == 2);
  t.clear();
  CHECK(t.size() == 0);
  CHECK_FALSE(t.earliest());
}

TEST_CASE("file timer: a pid is a rank's when it is the worker or descends from it; anything else is nobody's") {
  std::map<pid_t, int> workers{{100, 0}, {200, 1}};
  std::map<pid_t, pid_t> parents{{100, 50}, {200, 50}, {50, 1}, {300, 200}, {301, 300}, {400, 1}, {500, 50}};
  auto parent_of = [&](pid_t p) -> std::optional<pid_t> {
    auto it = parents.find(p);
    if (it == parents.end()) return std::nullopt;
    return it->second;
  };
  CHECK(rank_of_pid(100, workers, parent_of) == 0);
  CHECK(rank_of_pid(200, workers, parent_of) == 1);
  CHECK(rank_of_pid(301, workers, parent_of) == 1);   // a grandchild of rank 1
  CHECK_FALSE(rank_of_pid(50, workers, parent_of));   // the supervisor itself
  CHECK_FALSE(rank_of_pid(500, workers, parent_of));  // a sibling of the workers
  CHECK_FALSE(rank_of_pid(400, workers, parent_of));  // an unrelated process
  CHECK_FALSE(rank_of_pid(1, workers, parent_of));
  CHECK_FALSE(rank_of_pid(999, workers, parent_of));     // gone
  CHECK_FALSE(rank_of_pid(301, workers, parent_of, 1));  // deeper than allowed
  // A parent loop (a broken /proc read) ends.
  std::map<pid_t, pid_t> loop{{7, 8}, {8, 7}};
  CHECK_FALSE(rank_of_pid(7, workers, [&](pid_t p) -> std::optional<pid_t> { return loop.at(p); }));
}

TEST_CASE("file timer: complaints are logged once per sender and counted") {
  OncePerSender once(2);
  CHECK(once.first(7));
  CHECK_FALSE(once.first(7));
  CHECK(once.first(-1));
  CHECK_FALSE(once.first(8));  // beyond what it remembers: counted only
  CHECK(once.total() == 4);
  CHECK(once.logged() == 2);
}
