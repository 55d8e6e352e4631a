// platform/host.hpp, proc.hpp (this process), programs.hpp and files.hpp: the same on Linux and Windows.
#include <doctest/doctest.h>

#include <set>

#include "platform/files.hpp"
#include "platform/host.hpp"
#include "platform/proc.hpp"
#include "platform/programs.hpp"
#include "platform/signal_numbers.hpp"
#include "test_child.hpp"

using namespace ddp;

TEST_CASE("this process: its pid, start time, command line and file") {
  const pid_t self = platform::current_pid();
  auto st = proc::read_proc_stat(self);
  REQUIRE(st);
  CHECK(st->start_time > 0);
  CHECK(proc::cmdline(self).find("unit_platform") != std::string::npos);
  CHECK(platform::executable_path().filename().string().find("unit_platform") == 0);
}

TEST_CASE("a child's stat names us as its parent; once it exited it has none") {
  auto sleeper = spawn_process(test::child_request({"sleep", "60000"}));
  REQUIRE(sleeper.ok());
  auto st = proc::read_proc_stat(sleeper.child.pid());
  REQUIRE(st);
  CHECK(st->ppid == platform::current_pid());
  CHECK(st->start_time > 0);
  sleeper.child.signal_group(sig::kKill);
  CHECK(test::wait_exit(sleeper.child, std::chrono::seconds(10)));
}

TEST_CASE("a process that exited has no stat") {
  auto res = spawn_process(test::child_request({"exit", "0"}));
  REQUIRE(res.ok());
  REQUIRE(test::wait_exit(res.child, std::chrono::seconds(10)));
  CHECK_FALSE(proc::read_proc_stat(res.child.pid()));
}

TEST_CASE("the environment holds what this process was given") {
  auto env = platform::environment();
  CHECK(env.count("PATH") + env.count("Path") >= 1);
}

TEST_CASE("find_program: a path is taken as it is, a bare name that is nowhere is not found") {
  const auto child = test::child_program();
  CHECK(platform::names_a_path(child));
  CHECK_FALSE(platform::names_a_path("python3"));
  auto found = platform::find_program(child);
  REQUIRE(found);
  CHECK(std::filesystem::equivalent(*found, child));
  CHECK_FALSE(platform::find_program("ddp-no-such-program-anywhere"));
}

TEST_CASE("make_unique_directory makes a new directory each time") {
  const auto parent = std::filesystem::temp_directory_path();
  std::set<std::filesystem::path> made;
  for (int i = 0; i < 5; ++i) {
    auto dir = platform::make_unique_directory(parent, "ddp-unit-");
    CHECK(std::filesystem::is_directory(dir));
    CHECK(dir.filename().string().rfind("ddp-unit-", 0) == 0);
    made.insert(dir);
  }
  CHECK(made.size() == 5);
  for (const auto& d : made) std::filesystem::remove(d);
}
