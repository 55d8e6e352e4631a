// platform/spawn.hpp's Windows half (unit_platform.exe under Wine): what only a Job Object does.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

#include "platform/proc.hpp"
#include "platform/signal_numbers.hpp"
#include "test_child.hpp"

using namespace ddp;
using namespace std::chrono_literals;

TEST_CASE("closing the last handle of a worker's job ends it and what it started (KILL_ON_JOB_CLOSE)") {
  const auto file = std::filesystem::temp_directory_path() / ("ddp-job-" + std::to_string(platform::current_pid()));
  std::filesystem::remove(file);
  pid_t parent = 0, grandchild = 0;
  {
    auto res = spawn_process(test::child_request({"tree", "60000", file.string()}));
    REQUIRE_MESSAGE(res.ok(), res.what, ": ", res.error);
    std::tie(parent, grandchild) = test::read_tree(file);
    REQUIRE(grandchild > 0);
    CHECK(proc::read_proc_stat(parent));
    CHECK(proc::read_proc_stat(grandchild));
  }  // the Child goes: its job's only handle closes, as when the supervisor dies
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while ((proc::read_proc_stat(parent) || proc::read_proc_stat(grandchild)) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  CHECK_FALSE(proc::read_proc_stat(parent));
  CHECK_FALSE(proc::read_proc_stat(grandchild));
  std::filesystem::remove(file);
}

TEST_CASE("signal_group: SIGKILL ends the job and is told as SIGKILL; a signal Windows has no form of is refused") {
  auto res = spawn_process(test::child_request({"sleep", "60000"}));
  REQUIRE(res.ok());
  // Windows: true with a console shared; Wine implements Ctrl-Break for no one. Either way no crash.
  (void)res.child.signal_group(sig::kTerm);
  CHECK_FALSE(res.child.signal_group(sig::kUsr1));  // no such thing on Windows
  CHECK(res.child.signal_group(sig::kKill));
  auto x = test::wait_exit(res.child, 10s);
  REQUIRE(x);
  CHECK(x->signal == sig::kKill);
}
