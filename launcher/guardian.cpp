#include "launcher/guardian.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>

#include "common/error.hpp"
#include "launcher/cgroup.hpp"

namespace ddp::launcher {
namespace {

[[noreturn]] void guardian_main(int read_fd, const std::vector<std::filesystem::path>& cgroup_dirs) {
  ::setsid();  // out of the terminal's process group: Ctrl-C to the job does not reach us
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2}) ::signal(s, SIG_IGN);
  // Close every other descriptor: we must not keep the supervisor's pipes or sockets alive.
  for (int fd = 0; fd < 1024; ++fd) {
    if (fd != read_fd && fd != 2) ::close(fd);
  }
  std::set<pid_t> groups;
  std::string line;
  char buf[512];
  bool finish = false;
  std::filesystem::path remove_dir;
  for (;;) {
    ssize_t n = ::read(read_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EOF: the supervisor is gone (or done)
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] != '\n') {
        line += buf[i];
        continue;
      }
      if (line.size() >= 2 && line[0] == 'D') {
        remove_dir = line.substr(1);
      } else if (line.size() >= 2) {
        pid_t pgid = static_cast<pid_t>(std::atol(line.c_str() + 1));
        if (line[0] == '+') groups.insert(pgid);
        if (line[0] == '-') groups.erase(pgid);
      } else if (line == "F") {
        finish = true;
      }
      line.clear();
    }
    if (finish) break;
  }
  for (pid_t pgid : groups) {
    if (pgid > 1) ::kill(-pgid, SIGKILL);
  }
  kill_and_remove_run_cgroups(cgroup_dirs, std::chrono::milliseconds(2000));
  if (!finish && !remove_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(remove_dir, ec);
  }
  ::_exit(0);
}

}  // namespace

Guardian Guardian::start(const std::vector<std::filesystem::path>& cgroup_dirs) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw Error("cannot create the guardian's pipe");
  pid_t pid = ::fork();
  if (pid < 0) throw Error("cannot fork the guardian process");
  if (pid == 0) {
    ::close(fds[1]);
    guardian_main(fds[0], cgroup_dirs);
  }
  ::close(fds[0]);
  Guardian g;
  g.pid_ = pid;
  g.fd_ = fds[1];
  return g;
}

Guardian::Guardian(Guardian&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), fd_(std::exchange(other.fd_, -1)) {}

Guardian& Guardian::operator=(Guardian&& other) noexcept {
  if (this != &other) {
    finish();
    pid_ = std::exchange(other.pid_, -1);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Guardian::~Guardian() { finish(); }

void Guardian::send(char op, pid_t pgid) {
  if (fd_ < 0) return;
  char msg[32];
  int len = std::snprintf(msg, sizeof msg, "%c%d\n", op, static_cast<int>(pgid));
  // A pipe write of < PIPE_BUF bytes is atomic; the guardian reads promptly, so this never blocks long.
  while (::write(fd_, msg, static_cast<std::size_t>(len)) < 0 && errno == EINTR) {
  }
}

void Guardian::watch(pid_t pgid) { send('+', pgid); }
void Guardian::forget(pid_t pgid) { send('-', pgid); }

void Guardian::remove_on_death(const std::filesystem::path& dir) {
  if (fd_ < 0 || dir.empty()) return;
  std::string msg = "D" + dir.string() + "\n";
  if (msg.size() > PIPE_BUF || msg.find('\n') != msg.size() - 1) return;  // one atomic line, or nothing
  while (::write(fd_, msg.data(), msg.size()) < 0 && errno == EINTR) {
  }
}

void Guardian::finish() {
  if (fd_ < 0) return;
  const char msg[] = "F\n";
  while (::write(fd_, msg, 2) < 0 && errno == EINTR) {
  }
  ::close(fd_);
  fd_ = -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

}  // namespace ddp::launcher
