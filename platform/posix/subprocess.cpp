#include "platform/subprocess.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <initializer_list>
#include <optional>

extern char** environ;

namespace ddp {
namespace {

// A started helper: its pid and the read ends of its output pipes (err -1 unless separate_stderr).
struct Child {
  pid_t pid = 0;
  int out = -1;
  int err = -1;
};

void close_all(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

// Starts argv[0] (searched on PATH) with stdin /dev/null and stdout (and stderr) into pipes;
// nullopt with r.start_error set when it cannot be started.
std::optional<Child> start(const std::vector<std::string>& argv, bool separate_stderr, CommandRun& r) {
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0 || (separate_stderr && ::pipe2(err, O_CLOEXEC) != 0)) {
    r.start_error = fmt::format("pipe: {}", std::strerror(errno));
    close_all({out[0], out[1], err[0], err[1]});
    return std::nullopt;
  }
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  ::posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  ::posix_spawn_file_actions_adddup2(&actions, separate_stderr ? err[1] : out[1], STDERR_FILENO);
  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = ::posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  close_all({out[1], err[1]});
  if (rc != 0) {
    close_all({out[0], err[0]});
    r.start_error = std::strerror(rc);
    return std::nullopt;
  }
  return Child{pid, out[0], err[0]};
}

// One read from `fd` into `into` (kept up to 64 KiB); eof at its end or on an error.
void drain(int fd, std::string& into, bool& eof) {
  char buf[4096];
  const ssize_t n = ::read(fd, buf, sizeof buf);
  if (n > 0) {
    if (into.size() < 64 * 1024) into.append(buf, static_cast<std::size_t>(n));
  } else if (n == 0 || errno != EINTR) {
    eof = true;
  }
}

// Reads the child's output until both pipes end and it exits, or the deadline passes
// (r.timed_out). pidfd: the exit and the output are waited for in one poll, with one deadline.
void collect(const Child& c, int pidfd, std::chrono::steady_clock::time_point deadline, CommandRun& r) {
  bool out_eof = false;
  bool err_eof = c.err < 0;
  bool exited = false;
  while (!out_eof || !err_eof || !exited) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      return;
    }
    pollfd pfds[3] = {{out_eof ? -1 : c.out, POLLIN, 0},
                      {err_eof ? -1 : c.err, POLLIN, 0},
                      {exited || pidfd < 0 ? -1 : pidfd, POLLIN, 0}};
    if (::poll(pfds, 3, static_cast<int>(left)) < 0) {
      if (errno == EINTR) continue;
      r.timed_out = true;
      return;
    }
    if (pfds[0].revents != 0) drain(c.out, r.output, out_eof);
    if (pfds[1].revents != 0) drain(c.err, r.errors, err_eof);
    if (pfds[2].revents != 0) exited = true;
    // Without a pidfd (old kernel) the closed pipes are the sign of the end.
    if (pidfd < 0 && out_eof && err_eof) return;
  }
}

// Waits for the child (killed first when it ran out of time) and records how it ended.
void reap(const Child& c, CommandRun& r) {
  if (r.timed_out) ::kill(c.pid, SIGKILL);
  int status = 0;
  while (::waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
}

}  // namespace

CommandRun run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, bool separate_stderr) {
  CommandRun r;
  if (argv.empty()) {
    r.start_error = "no program given";
    return r;
  }
  auto child = start(argv, separate_stderr, r);
  if (!child) return r;
  r.started = true;
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child->pid, 0));
  collect(*child, pidfd, std::chrono::steady_clock::now() + timeout, r);
  reap(*child, r);
  close_all({pidfd, child->out, child->err});
  return r;
}

}  // namespace ddp
