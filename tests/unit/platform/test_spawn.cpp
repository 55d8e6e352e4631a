// platform/spawn.hpp and pipe.hpp with real processes, the same on Linux and Windows (under Wine).
#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "platform/proc.hpp"
#include "platform/signal_numbers.hpp"
#include "test_child.hpp"

using namespace ddp;
using namespace std::chrono_literals;

namespace {

// Polls until `pid` is gone (at most `limit`).
bool gone_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!proc::read_proc_stat(pid)) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

}  // namespace

TEST_CASE("the child's stdout and stderr go to the pipes given, its environment is the one given") {
  std::string error;
  auto out = platform::make_output_pipe(error);
  REQUIRE(out);
  auto r = test::child_request({"env", "GREETING"});
  r.env = {"GREETING=hello from the request"};
  r.stdout_fd = out->write;
  r.die_with_parent = false;
  auto res = spawn_process(r);
  platform::close_handle(out->write);
  REQUIRE_MESSAGE(res.ok(), res.what, ": ", res.error);
  CHECK(test::read_to_end(out->read, 10s) == "hello from the request\n");
  CHECK(test::wait_exit(res.child, 10s));
}

TEST_CASE("a program that cannot be started is an error naming the step and why") {
  SpawnRequest r;
  r.program = (std::filesystem::temp_directory_path() / "no-such-dir" / "no-such-program").string();
  r.argv = {r.program};
  auto res = spawn_process(r);
  CHECK_FALSE(res.ok());
  CHECK_FALSE(res.what.empty());
  CHECK_FALSE(res.error.empty());
}

TEST_CASE("signal_group(SIGKILL) ends the child and what it started") {
  const auto file = std::filesystem::temp_directory_path() / ("ddp-tree-" + std::to_string(platform::current_pid()));
  std::filesystem::remove(file);
  std::string error;
  auto out = platform::make_output_pipe(error);
  REQUIRE(out);
  auto r = test::child_request({"tree", "60000", file.string()});
  r.stdout_fd = out->write;
  auto res = spawn_process(r);
  platform::close_handle(out->write);
  REQUIRE_MESSAGE(res.ok(), res.what, ": ", res.error);
  const auto [parent, grandchild] = test::read_tree(file);
  REQUIRE(grandchild > 0);
  CHECK(parent == res.child.pid());
  CHECK(res.child.signal_group(sig::kKill));
  auto x = test::wait_exit(res.child, 10s);
  REQUIRE(x);
  CHECK(x->signal == sig::kKill);
  CHECK(gone_within(grandchild, 10s));
  platform::close_handle(out->read);
  std::filesystem::remove(file);
}
