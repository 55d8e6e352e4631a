#include "common/subprocess.hpp"

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

extern char** environ;

namespace ddp {

CommandRun run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, bool separate_stderr) {
  CommandRun r;
  if (argv.empty()) {
    r.start_error = "no program given";
    return r;
  }
  int out[2] = {-1, -1};
  int err[2] = {-1, -1};
  if (::pipe2(out, O_CLOEXEC) != 0 || (separate_stderr && ::pipe2(err, O_CLOEXEC) != 0)) {
    r.start_error = fmt::format("pipe: {}", std::strerror(errno));
    for (int fd : {out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return r;
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
  ::close(out[1]);
  if (err[1] >= 0) ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    if (err[0] >= 0) ::close(err[0]);
    r.start_error = std::strerror(rc);
    return r;
  }
  r.started = true;

  // pidfd: the child's exit and its output are waited for in one poll, with one deadline.
  const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool out_eof = false;
  bool err_eof = err[0] < 0;
  bool exited = false;
  auto drain = [](int fd, std::string& into, bool& eof) {
    char buf[4096];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      if (into.size() < 64 * 1024) into.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      eof = true;
    }
  };
  while (!out_eof || !err_eof || !exited) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd pfds[3] = {{out_eof ? -1 : out[0], POLLIN, 0},
                      {err_eof ? -1 : err[0], POLLIN, 0},
                      {exited || pidfd < 0 ? -1 : pidfd, POLLIN, 0}};
    if (::poll(pfds, 3, static_cast<int>(left)) < 0) {
      if (errno == EINTR) continue;
      r.timed_out = true;
      break;
    }
    if (pfds[0].revents != 0) drain(out[0], r.output, out_eof);
    if (pfds[1].revents != 0) drain(err[0], r.errors, err_eof);
    if (pfds[2].revents != 0) exited = true;
    // Without a pidfd (old kernel) the closed pipes are the sign of the end.
    if (pidfd < 0 && out_eof && err_eof) break;
  }
  if (r.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (pidfd >= 0) ::close(pidfd);
  ::close(out[0]);
  if (err[0] >= 0) ::close(err[0]);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

}  // namespace ddp
