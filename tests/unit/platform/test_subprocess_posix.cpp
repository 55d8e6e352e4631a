#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <string>

#include "platform/subprocess.hpp"

using namespace ddp;
using namespace std::chrono_literals;

TEST_CASE("run_command: exit code, stdout and stderr together by default") {
  auto r = run_command({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10s);
  CHECK(r.started);
  CHECK_FALSE(r.timed_out);
  CHECK(r.exit_code == 3);
  CHECK(r.signal == 0);
  CHECK_FALSE(r.ok());
  CHECK(r.output.find("out\n") != std::string::npos);
  CHECK(r.output.find("err\n") != std::string::npos);
  CHECK(r.errors.empty());
}

TEST_CASE("run_command: separate_stderr keeps the streams apart; exit 0 is ok()") {
  auto r = run_command({"sh", "-c", "echo out; echo err >&2"}, 10s, true);
  CHECK(r.ok());
  CHECK(r.output == "out\n");
  CHECK(r.errors == "err\n");
}

TEST_CASE("run_command: stdin is /dev/null") {
  auto r = run_command({"cat"}, 10s);
  CHECK(r.ok());
  CHECK(r.output.empty());
}

TEST_CASE("run_command: a signal that ends it is reported, with no exit code") {
  auto r = run_command({"sh", "-c", "kill -TERM $$"}, 10s);
  CHECK(r.started);
  CHECK(r.signal == SIGTERM);
  CHECK(r.exit_code == -1);
  CHECK_FALSE(r.ok());
}

TEST_CASE("run_command: past its timeout it is killed and reported as timed out") {
  const auto t0 = std::chrono::steady_clock::now();
  auto r = run_command({"sleep", "30"}, 200ms);
  CHECK(r.started);
  CHECK(r.timed_out);
  CHECK(r.signal == SIGKILL);
  CHECK_FALSE(r.ok());
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
}

TEST_CASE("run_command: output beyond 64 KiB per stream is dropped") {
  auto r = run_command({"sh", "-c", "head -c 300000 /dev/zero"}, 10s);
  CHECK(r.ok());
  CHECK(r.output.size() >= 64 * 1024);
  CHECK(r.output.size() < 64 * 1024 + 4096);
}

TEST_CASE("run_command: a program that cannot be started, and no program at all") {
  auto missing = run_command({"/nonexistent/ddp-no-such-program"}, 10s);
  CHECK_FALSE(missing.started);
  CHECK_FALSE(missing.start_error.empty());
  CHECK_FALSE(missing.ok());
  auto none = run_command({}, 10s);
  CHECK_FALSE(none.started);
  CHECK(none.start_error == "no program given");
}
