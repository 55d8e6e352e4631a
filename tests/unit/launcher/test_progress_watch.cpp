// The progress watchdog's driver on a real io_context with short timeouts: one timer set to the
// earliest deadline, no re-arm per progress, a verdict once; and the heartbeat files seen through
// inotify on the same loop.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <fstream>
#include <vector>

#include "launcher/hang/heartbeat_files.hpp"
#include "launcher/hang/progress_watch.hpp"
#include "tests/unit/temp_dir.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;

namespace {

struct Fixture {
  boost::asio::io_context io;
  std::vector<HangVerdict> verdicts;
  std::vector<std::string> notices;
  ProgressWatch watch;

  explicit Fixture(HangTimeout t)
      : watch(io, t,
              {.hung = [this](const HangVerdict& v) { verdicts.push_back(v); },
               .notice = [this](const std::string& n) { notices.push_back(n); }}) {}

  // Runs the loop until it has nothing left to do (at most `limit`).
  void run_to_end(std::chrono::milliseconds limit = 5000ms) {
    io.restart();
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (!io.stopped() && std::chrono::steady_clock::now() < deadline) io.run_one_for(50ms);
    REQUIRE_MESSAGE(io.stopped(), "the loop still had work after the limit");
  }
};

}  // namespace

TEST_CASE("progress watch: a silent rank hangs once its timeout passed; one verdict, then nothing armed") {
  Fixture f({HangTimeout::Mode::Fixed, 100ms});
  auto start = std::chrono::steady_clock::now();
  f.watch.begin(2, {7, 8});
  CHECK(f.watch.armed());
  f.run_to_end();
  REQUIRE(f.verdicts.size() == 1);
  CHECK(std::chrono::steady_clock::now() - start >= 100ms);
  CHECK(f.verdicts[0].attempt == 2);
  CHECK(f.verdicts[0].silent.size() == 2);
  CHECK_FALSE(f.watch.armed());
}

TEST_CASE("progress watch: progress never re-arms the timer; it wakes once per deadline, not per line") {
  Fixture f({HangTimeout::Mode::Fixed, 150ms});
  f.watch.begin(0, {0});
  // 30 progress reports, 10 ms apart, for 300 ms: at most a few wake-ups, no verdict.
  boost::asio::steady_timer ticker(f.io);
  int ticks = 0;
  std::function<void()> tick = [&] {
    f.watch.on_progress(0);
    if (++ticks == 30) {
      f.watch.stop();
      return;
    }
    ticker.expires_after(10ms);
    ticker.async_wait([&](boost::system::error_code ec) {
      if (!ec) tick();
    });
  };
  tick();
  f.run_to_end();
  CHECK(f.verdicts.empty());
  CHECK(f.watch.wakeups() <= 4);
  CHECK(f.watch.wakeups() >= 1);
}

TEST_CASE("progress watch: off arms nothing; stop cancels a pending deadline") {
  Fixture off({HangTimeout::Mode::Off, {}});
  off.watch.begin(0, {0});
  CHECK_FALSE(off.watch.armed());
  off.run_to_end(200ms);
  CHECK(off.verdicts.empty());

  Fixture f({HangTimeout::Mode::Fixed, 50ms});
  f.watch.begin(0, {0});
  f.watch.stop();
  f.run_to_end();
  CHECK(f.verdicts.empty());
  CHECK(f.watch.wakeups() == 0);
}

TEST_CASE("heartbeat files: local_rank_N names only") {
  CHECK(heartbeat_local_rank("local_rank_0") == 0);
  CHECK(heartbeat_local_rank("local_rank_12") == 12);
  for (const char* bad : {"local_rank_", "local_rank_x", "local_rank_1.swp", "rank_1", ".local_rank_1", ""}) {
    CAPTURE(bad);
    CHECK_FALSE(heartbeat_local_rank(bad));
  }
}

TEST_CASE("heartbeat files: open-for-write, a write and a touch each reach the loop as the rank's beat") {
  ddp::test::TempDir tmp("heartbeat_files_test");
  boost::asio::io_context io;
  std::vector<int> beats;
  HeartbeatFiles files(io, tmp.path / "heartbeats", [&](int r) { beats.push_back(r); });
  REQUIRE(files.enabled());
  const auto path = files.path_of(3);
  CHECK(path == (tmp.path / "heartbeats" / "local_rank_3").string());

  auto wait_for_beat = [&](const char* what) {
    CAPTURE(what);
    beats.clear();
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (beats.empty() && std::chrono::steady_clock::now() < deadline) io.run_one_for(50ms);
    REQUIRE_MESSAGE(!beats.empty(), "no heartbeat seen within 5 s");
    CHECK(beats.front() == 3);
  };
  ::close(::open(path.c_str(), O_WRONLY | O_CREAT, 0644));  // Python's open(p, "w").close()
  wait_for_beat("create");
  ::close(::open(path.c_str(), O_WRONLY, 0644));
  wait_for_beat("open for write");
  std::ofstream(path, std::ios::app) << "x";
  wait_for_beat("write");
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), nullptr, 0) == 0);  // touch
  wait_for_beat("touch");
  // Another file in the directory is no rank's.
  std::ofstream(tmp.path / "heartbeats" / "notes.txt") << "x";
  beats.clear();
  io.run_for(100ms);
  CHECK(beats.empty());
}

TEST_CASE("heartbeat files: a directory that cannot be made turns them off, with an empty path") {
  ddp::test::TempDir tmp("heartbeat_files_off");
  std::ofstream(tmp.path / "file") << "x";
  boost::asio::io_context io;
  HeartbeatFiles files(io, tmp.path / "file" / "heartbeats", [](int) {});
  CHECK_FALSE(files.enabled());
  CHECK(files.path_of(0).empty());
}
