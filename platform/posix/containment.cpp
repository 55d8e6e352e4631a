#include "platform/containment.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace ddp::platform {
namespace {

[[noreturn]] void guardian_main(int read_fd, const std::function<void()>& on_death) {
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
  if (on_death) on_death();
  if (!finish && !remove_dir.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(remove_dir, ec);
  }
  ::_exit(0);
}

}  // namespace

Containment Containment::start(std::function<void()> on_death) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("cannot create the guardian's pipe: ") + std::strerror(errno));
  }
  pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("cannot fork the guardian process: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(fds[1]);
    guardian_main(fds[0], on_death);
  }
  ::close(fds[0]);
  Containment g;
  g.pid_ = pid;
  g.fd_ = fds[1];
  return g;
}

Containment::Containment(Containment&& other) noexcept
    : pid_(std::exchange(other.pid_, 0)), fd_(std::exchange(other.fd_, -1)) {}

Containment& Containment::operator=(Containment&& other) noexcept {
  if (this != &other) {
    finish();
    pid_ = std::exchange(other.pid_, 0);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

Containment::~Containment() { finish(); }

void Containment::send(char op, pid_t pgid) {
  if (fd_ < 0) return;
  char msg[32];
  int len = std::snprintf(msg, sizeof msg, "%c%d\n", op, static_cast<int>(pgid));
  // A pipe write of < PIPE_BUF bytes is atomic; the guardian reads promptly, so this never blocks long.
  while (::write(fd_, msg, static_cast<std::size_t>(len)) < 0 && errno == EINTR) {
  }
}

void Containment::watch(pid_t pgid) { send('+', pgid); }
void Containment::forget(pid_t pgid) { send('-', pgid); }

void Containment::remove_on_death(const std::filesystem::path& dir) {
  if (fd_ < 0 || dir.empty()) return;
  std::string msg = "D" + dir.string() + "\n";
  if (msg.size() > PIPE_BUF || msg.find('\n') != msg.size() - 1) return;  // one atomic line, or nothing
  while (::write(fd_, msg.data(), msg.size()) < 0 && errno == EINTR) {
  }
}

void Containment::finish() {
  if (fd_ < 0) return;
  const char msg[] = "F\n";
  while (::write(fd_, msg, 2) < 0 && errno == EINTR) {
  }
  ::close(fd_);
  fd_ = -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = 0;
}

}  // namespace ddp::platform
