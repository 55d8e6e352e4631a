#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "platform/spawn.hpp"

using namespace ddp;

namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

int wait_status(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

TEST_CASE("a spawned program gets its argv, exactly the given environment, the pipes and /dev/null as stdin") {
  int out[2], err[2];
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(err, O_CLOEXEC) == 0);
  SpawnRequest r;
  r.program = "/bin/sh";
  r.argv = {"sh", "-c", "echo \"$0 $1 $GREETING\"; echo \"only $(env | wc -l) vars\" >&2; cat; exit 3", "zero", "arg1"};
  r.env = {"GREETING=hello", "PATH=/usr/bin:/bin"};
  r.stdout_fd = out[1];
  r.stderr_fd = err[1];
  r.die_with_parent = false;
  auto res = spawn_process(r);
  ::close(out[1]);
  ::close(err[1]);
  REQUIRE(res.ok());
  CHECK(read_all(out[0]) == "zero arg1 hello\n");                    // `cat` read EOF at once: stdin is /dev/null
  CHECK(read_all(err[0]).find("only 3 vars") != std::string::npos);  // GREETING, PATH and sh's own PWD
  int status = wait_status(res.child.pid());
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  ::close(out[0]);
  ::close(err[0]);
}

TEST_CASE("a program that cannot be executed is an error naming the step, with no child left") {
  SpawnRequest r;
  r.program = "/nonexistent/program";
  r.argv = {"program"};
  auto res = spawn_process(r);
  CHECK(!res.ok());
  CHECK(res.error == std::strerror(ENOENT));
  CHECK(res.what == "execve");
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);  // reaped already: no zombie (ECHILD)
}

TEST_CASE("the child leads its own session, and SIGPIPE and caught signals are back at their defaults") {
  ::signal(SIGPIPE, SIG_IGN);
  ::signal(SIGUSR1, [](int) {});
  int out[2];
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  SpawnRequest r;
  r.program = "/bin/cat";  // no shell between: /proc/self is the spawned program itself
  r.argv = {"cat", "/proc/self/status", "/proc/self/stat"};
  r.stdout_fd = out[1];
  auto res = spawn_process(r);
  ::close(out[1]);
  REQUIRE(res.ok());
  auto text = read_all(out[0]);
  wait_status(res.child.pid());
  ::close(out[0]);
  ::signal(SIGPIPE, SIG_DFL);
  ::signal(SIGUSR1, SIG_DFL);
  auto field = [&](const std::string& name) {
    auto at = text.find(name + ":\t");
    REQUIRE(at != std::string::npos);
    return std::stoull(text.substr(at + name.size() + 2, 16), nullptr, 16);
  };
  CHECK(field("SigBlk") == 0);
  CHECK((field("SigIgn") & (1ull << (SIGPIPE - 1))) == 0);
  CHECK((field("SigCgt") & (1ull << (SIGUSR1 - 1))) == 0);
  // /proc/self/stat: pid (comm) state ppid pgrp session ...
  auto stat = text.substr(text.rfind(") ") + 2);
  int ppid = 0, pgrp = 0, session = 0;
  char state = 0;
  REQUIRE(std::sscanf(stat.c_str(), "%c %d %d %d", &state, &ppid, &pgrp, &session) == 4);
  CHECK(session == res.child.pid());
  CHECK(pgrp == res.child.pid());
}
