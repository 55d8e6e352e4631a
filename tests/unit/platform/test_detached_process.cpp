// platform/detached_process.hpp, files.hpp's process lock and stop_signals.hpp's request_stop: how the
// job daemon starts, follows, stops and reaps its supervisors, and keeps its state directory to
// itself. The same on Linux and under Wine (unit_platform.exe).
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "platform/detached_process.hpp"
#include "platform/files.hpp"
#include "platform/host.hpp"
#include "platform/signal_numbers.hpp"
#include "test_child.hpp"

using namespace ddp;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

struct Dir {
  Dir() : path(fs::canonical(platform::make_unique_directory(fs::temp_directory_path(), "ddp_detached_"))) {}
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

std::string read(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  std::string out;
  for (char c : s.str()) {
    if (c != '\r') out.push_back(c);
  }
  return out;
}

// Waits (10 s at most) until `file` holds `text`.
bool wait_for_text(const fs::path& file, const std::string& text) {
  for (int i = 0; i < 500; ++i) {
    if (read(file).find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

platform::DetachedSpawn child(const std::vector<std::string>& args, const fs::path& output) {
  platform::DetachedSpawn r;
  r.argv = {test::child_program()};
  r.argv.insert(r.argv.end(), args.begin(), args.end());
  r.output_file = output;
  return r;
}

// Runs the loop until the watch's on_exit ran (20 s at most).
bool wait_ended(boost::asio::io_context& io, platform::ProcessWatch& watch) {
  bool ended = false;
  watch.async_wait([&] { ended = true; });
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (!ended && std::chrono::steady_clock::now() < deadline) io.run_for(50ms);
  return ended;
}

}  // namespace

TEST_CASE("a detached child starts in its workdir with our environment and its overrides, output appended") {
  Dir dir;
  const auto out = dir.path / "out.log";
  { std::ofstream(out) << "before\n"; }
  auto req = child({"env", "DDP_DETACHED_TEST"}, out);
  req.env_overrides["DDP_DETACHED_TEST"] = "set by the request";
  std::string why;
  const pid_t pid = platform::spawn_detached(req, why);
  REQUIRE_MESSAGE(pid > 0, why);
  auto end = platform::reap_child(pid);
  REQUIRE(end);
  CHECK(end->exit_code == 0);
  CHECK(end->signal == 0);
  CHECK(read(out) == "before\nset by the request\n");

  auto in_dir = child({"cwd"}, dir.path / "cwd.log");
  in_dir.workdir = dir.path;
  const pid_t second = platform::spawn_detached(in_dir, why);
  REQUIRE_MESSAGE(second > 0, why);
  REQUIRE(platform::reap_child(second));
  auto cwd = read(dir.path / "cwd.log");
  CHECK(fs::equivalent(cwd.substr(0, cwd.find('\n')), dir.path));
}

TEST_CASE("a detached child is followed, asked to stop as by SIGTERM, and reaped with its exit code") {
  Dir dir;
  const auto out = dir.path / "out.log";
  std::string why;
  const pid_t pid = platform::spawn_detached(child({"ctrl", "30000"}, out), why);
  REQUIRE_MESSAGE(pid > 0, why);
  boost::asio::io_context io;
  platform::ProcessWatch watch(io, pid);
  REQUIRE(watch.open());
  REQUIRE(wait_for_text(out, "ctrl ready"));
  // POSIX: SIGTERM through the pidfd; Windows: the named event its StopSignals waits on (no console
  // is shared with it, and Wine sends no Ctrl-Break).
  CHECK(watch.signal(sig::kTerm));
  CHECK(wait_ended(io, watch));
  auto end = platform::reap_child(pid);
  REQUIRE(end);
  CHECK(end->exit_code == 42);
  CHECK(read(out).find("got ctrl 15") != std::string::npos);
  CHECK_FALSE(platform::reap_child(pid));  // reaped once
}

TEST_CASE("a detached child killed through its watch is reaped as killed by SIGKILL") {
  Dir dir;
  std::string why;
  const pid_t pid = platform::spawn_detached(child({"sleep", "60000"}, dir.path / "out.log"), why);
  REQUIRE_MESSAGE(pid > 0, why);
  boost::asio::io_context io;
  platform::ProcessWatch watch(io, pid);
  REQUIRE(watch.open());
  CHECK(watch.signal(sig::kKill));
  CHECK(wait_ended(io, watch));
  auto end = platform::reap_child(pid);
  REQUIRE(end);
  CHECK(end->signal == sig::kKill);
  platform::ProcessWatch after(io, pid);
  CHECK_FALSE(after.open());  // gone: nothing to follow
}

TEST_CASE("a program that cannot be started is an error that names why, not a pid") {
  Dir dir;
  auto req = child({"exit", "0"}, dir.path / "out.log");
  req.argv[0] = (dir.path / "no-such-program").string();
  std::string why;
  CHECK(platform::spawn_detached(req, why) == 0);
  CHECK_FALSE(why.empty());
}

TEST_CASE("the process lock: one holder, whose pid stays readable") {
  Dir dir;
  const auto file = dir.path / "daemon.lock";
  std::string why;
  CHECK(platform::lock_for_process_lifetime(file, why) == platform::ProcessLock::Held);
  CHECK(why.empty());
  // Another open of the file (as a second daemon's) finds it taken.
  CHECK(platform::lock_for_process_lifetime(file, why) == platform::ProcessLock::Busy);
  std::string pid;
  std::ifstream(file) >> pid;
  CHECK(pid == std::to_string(platform::current_pid()));
  CHECK(platform::lock_for_process_lifetime(dir.path / "no-such-dir" / "daemon.lock", why) ==
        platform::ProcessLock::Failed);
  CHECK_FALSE(why.empty());
}
