// Spawning ranks on pipes and reaping them with real processes; other children are left alone.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "common/error.hpp"
#include "launcher/spawner.hpp"

using namespace ddp::launcher;

namespace {

WorkerLaunch sh(const std::string& script) {
  WorkerLaunch l;
  l.argv = {"/bin/sh", "-c", script};
  l.env = {{"PATH", "/usr/bin:/bin"}};
  return l;
}

std::string read_all(int fd) {
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  return out;
}

// Reaps until `count` exits arrived (polled, 10 s at most).
std::map<int, RankExit> reap_all(Reaper& reaper, std::size_t count) {
  std::map<int, RankExit> exits;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (exits.size() < count && std::chrono::steady_clock::now() < deadline) {
    reaper.reap([&](const RankExit& x) { exits[x.local_rank] = x; });
    if (exits.size() < count) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return exits;
}

}  // namespace

TEST_CASE("spawn_rank: the rank's stdout and stderr arrive on their own pipes") {
  auto p = spawn_rank(0, sh("echo out; echo err >&2; exit 3"), {}, {});
  REQUIRE(p.pid > 0);
  CHECK(read_all(p.stdout_fd) == "out\n");
  CHECK(read_all(p.stderr_fd) == "err\n");
  Reaper reaper;
  reaper.watch(p.pid, 0);
  auto exits = reap_all(reaper, 1);
  REQUIRE(exits.count(0));
  CHECK(exits[0].pid == p.pid);
  CHECK(exits[0].exit_code == 3);
  CHECK(exits[0].signal == 0);
  CHECK(exits[0].time > 0);
  CHECK(reaper.watched() == 0);
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

TEST_CASE("reaper: exit codes and signals by local rank; a child it was not told about is not reaped") {
  pid_t other = ::fork();
  REQUIRE(other >= 0);
  if (other == 0) ::_exit(5);  // not a rank: the guardian stands for such a child
  Reaper reaper;
  auto a = spawn_rank(0, sh("exit 0"), {}, {});
  auto b = spawn_rank(1, sh("kill -9 $$"), {}, {});
  auto c = spawn_rank(2, sh("exit 42"), {}, {});
  for (const auto* p : {&a, &b, &c}) {
    ::close(p->stdout_fd);
    ::close(p->stderr_fd);
  }
  reaper.watch(a.pid, 0);
  reaper.watch(b.pid, 1);
  reaper.watch(c.pid, 2);
  auto exits = reap_all(reaper, 3);
  REQUIRE(exits.size() == 3);
  CHECK_FALSE(exits[0].failed());
  CHECK(exits[1].signal == SIGKILL);
  CHECK(exits[2].exit_code == 42);
  // The other child is still ours to wait for.
  int status = 0;
  CHECK(::waitpid(other, &status, 0) == other);
  CHECK(WEXITSTATUS(status) == 5);
}

TEST_CASE("rank_exit: from a wait status") {
  CHECK(rank_exit(1, 10, 3 << 8, 2.5).exit_code == 3);  // WIFEXITED, code 3
  auto killed = rank_exit(1, 10, SIGTERM, 2.5);        // WIFSIGNALED
  CHECK(killed.signal == SIGTERM);
  CHECK(killed.exit_code == 0);
  CHECK(killed.time == 2.5);
}
