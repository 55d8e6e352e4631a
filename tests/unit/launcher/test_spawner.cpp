// Spawning ranks on pipes with real processes (their exits: tests/unit/platform/test_child_exits.cpp).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "common/error.hpp"
#include "launcher/supervisor/spawner.hpp"
#include "tests/unit/launcher/sh_launch.hpp"

using namespace ddp::launcher;
using ddp::test::sh;

namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

}  // namespace

TEST_CASE("spawn_rank: the rank's stdout and stderr arrive on their own pipes") {
  auto p = spawn_rank(0, sh("echo out; echo err >&2; exit 3"), {}, {});
  REQUIRE(p.pid() > 0);
  CHECK(read_all(p.stdout_fd) == "out\n");
  CHECK(read_all(p.stderr_fd) == "err\n");
  int status = 0;
  REQUIRE(::waitpid(p.pid(), &status, 0) == p.pid());
  CHECK(WEXITSTATUS(status) == 3);
}

TEST_CASE("spawn_rank: a program that cannot start names the rank and the fix") {
  WorkerLaunch l;
  l.argv = {"/nonexistent/python3"};
  try {
    spawn_rank(7, l, {}, {});
    FAIL("no error");
  } catch (const ddp::Error& e) {
    std::string what = e.what();
    CHECK(what.find("cannot start rank 7: /nonexistent/python3") != std::string::npos);
    CHECK(what.find("--python/--no-python") != std::string::npos);
  }
}

TEST_CASE("rank_exit: a child's exit in the machine's terms, its tag the local rank") {
  auto x = rank_exit(ddp::platform::ChildExit{.pid = 10, .tag = 1, .exit_code = 0, .signal = SIGTERM, .time = 2.5});
  CHECK(x.local_rank == 1);
  CHECK(x.pid == 10);
  CHECK(x.signal == SIGTERM);
  CHECK(x.exit_code == 0);
  CHECK(x.time == 2.5);
}
