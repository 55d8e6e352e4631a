// platform/subprocess.hpp: a helper to its end, output captured, killed at its deadline (Linux and Wine).
#include <doctest/doctest.h>

#include "platform/subprocess.hpp"
#include "test_child.hpp"

using namespace ddp;
using namespace std::chrono_literals;

namespace {

std::string without_cr(std::string s) {
  std::erase(s, '\r');
  return s;
}

}  // namespace

TEST_CASE("run_command: output and exit code") {
  auto r = run_command({test::child_program(), "print", "one", "two"}, 20s);
  CHECK(r.started);
  CHECK(r.ok());
  CHECK(without_cr(r.output) == "one\ntwo\n");
  auto fails = run_command({test::child_program(), "exit", "3"}, 20s);
  CHECK(fails.exit_code == 3);
  CHECK_FALSE(fails.ok());
}

TEST_CASE("run_command: stderr apart when asked") {
  auto r = run_command({test::child_program(), "stderr", "oops"}, 20s, true);
  CHECK(r.ok());
  CHECK(r.output.empty());
  CHECK(without_cr(r.errors) == "oops\n");
}

TEST_CASE("run_command: a helper past its deadline is killed and says so") {
  const auto start = std::chrono::steady_clock::now();
  auto r = run_command({test::child_program(), "sleep", "60000"}, 500ms);
  CHECK(r.timed_out);
  CHECK_FALSE(r.ok());
  CHECK(std::chrono::steady_clock::now() - start < 15s);
}

TEST_CASE("run_command: a program that is nowhere is not started") {
  auto r = run_command({"ddp-no-such-program-anywhere"}, 5s);
  CHECK_FALSE(r.started);
  CHECK_FALSE(r.start_error.empty());
}
