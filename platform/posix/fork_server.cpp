// platform/fork_server.hpp on POSIX (Linux): a SOCK_SEQPACKET pair, SCM_RIGHTS, the child subreaper.
#include "platform/fork_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ddp::platform {

std::optional<ForkChannel> make_fork_channel(std::string& error) {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) {
    error = std::string("socketpair: ") + std::strerror(errno);
    return std::nullopt;
  }
  // The fork server's end is inherited by the next child started (and only by it: the caller
  // closes it at once, on its one thread).
  ::fcntl(fds[1], F_SETFD, 0);
  return ForkChannel{fds[0], fds[1]};
}

std::string channel_argument(NativeHandle theirs) { return std::to_string(theirs); }

bool send_message(NativeHandle channel, const std::string& message, const std::vector<NativeHandle>& fds,
                  std::string& error) {
  iovec iov{const_cast<char*>(message.data()), message.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * fds.size()));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  for (;;) {
    if (::sendmsg(channel, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(message.size())) return true;
    if (errno != EINTR) break;
  }
  error = std::string("sendmsg: ") + std::strerror(errno);
  return false;
}

std::optional<std::string> receive_message(NativeHandle channel, std::chrono::milliseconds timeout,
                                           std::string& error) {
  error.clear();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd p{channel, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left > 0 ? left : 0));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = std::string("poll: ") + std::strerror(errno);
      return std::nullopt;
    }
    if (n == 0) return std::nullopt;
    std::string buf(64 * 1024, '\0');
    const ssize_t got = ::recv(channel, buf.data(), buf.size(), MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got < 0) {
      error = std::string("recv: ") + std::strerror(errno);
      return std::nullopt;
    }
    if (got == 0) {
      error = "the other end closed the channel";
      return std::nullopt;
    }
    buf.resize(static_cast<std::size_t>(got));
    return buf;
  }
}

bool adopt_orphans(bool on) { return ::prctl(PR_SET_CHILD_SUBREAPER, on ? 1 : 0) == 0; }

}  // namespace ddp::platform
