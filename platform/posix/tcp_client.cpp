#include "platform/tcp_client.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <system_error>

namespace ddp::platform {
namespace {

using Clock = TcpClient::Clock;

std::string errno_text(int err) { return std::generic_category().message(err); }

int ms_until(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<long long>(left, 1 << 30));
}

// Waits until `fd` is ready for `events` or the deadline passes (false).
bool wait_ready(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, ms_until(deadline));
    if (n > 0) return true;
    if (n == 0) {
      if (Clock::now() >= deadline) return false;
      continue;  // poll's millisecond rounding woke us a hair early
    }
    if (errno != EINTR) throw std::system_error(errno, std::generic_category(), "poll");
  }
}

}  // namespace

std::vector<TcpAddress> resolve_tcp(const std::string& host, std::uint16_t port, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* list = nullptr;
  auto service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    why = fmt::format("cannot resolve {}: {}", host, ::gai_strerror(rc));
    return {};
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(list, &::freeaddrinfo);
  return detail::tcp_addresses(list);
}

TcpClient::operator bool() const { return socket_ >= 0; }

void TcpClient::close() {
  if (socket_ >= 0) ::close(static_cast<int>(socket_));
  socket_ = -1;
}

bool TcpClient::connect(const TcpAddress& address, Clock::time_point deadline, std::string& why) {
  close();
  int fd = ::socket(address.family, address.socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, address.protocol);
  if (fd < 0) {
    why = "socket: " + errno_text(errno);
    return false;
  }
  socket_ = fd;
  sockaddr_storage sa{};
  std::memcpy(&sa, address.sockaddr.data(), std::min(address.sockaddr.size(), sizeof(sa)));
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&sa), static_cast<socklen_t>(address.sockaddr.size())) != 0) {
    if (errno != EINPROGRESS) {
      why = errno_text(errno);
      close();
      return false;
    }
    // A SYN to a silent host can take minutes to fail; the poll bounds it by our deadline.
    if (!wait_ready(fd, POLLOUT, deadline)) {
      why = "connect did not complete in time";
      close();
      return false;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      why = errno_text(err);
      close();
      return false;
    }
  }
  // Requests are small and each waits for its reply: Nagle would add a delay to every call.
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return true;
}

TcpClient::Io TcpClient::send_all(std::string_view bytes, Clock::time_point deadline) {
  const int fd = static_cast<int>(socket_);
  last_error_ = 0;
  while (!bytes.empty()) {
    auto n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n >= 0) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      last_error_ = errno;
      return errno == EPIPE || errno == ECONNRESET ? Io::Closed : Io::Error;
    }
    if (!wait_ready(fd, POLLOUT, deadline)) return Io::Timeout;
  }
  return Io::Ok;
}

TcpClient::Io TcpClient::recv_exact(char* p, std::size_t n, Clock::time_point deadline) {
  const int fd = static_cast<int>(socket_);
  last_error_ = 0;
  while (n > 0) {
    auto got = ::recv(fd, p, n, 0);
    if (got > 0) {
      p += got;
      n -= static_cast<std::size_t>(got);
      continue;
    }
    if (got == 0) return Io::Closed;
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      last_error_ = errno;
      return errno == ECONNRESET ? Io::Closed : Io::Error;
    }
    if (!wait_ready(fd, POLLIN, deadline)) return Io::Timeout;
  }
  return Io::Ok;
}

bool TcpClient::idle_and_open() const {
  pollfd p{static_cast<int>(socket_), POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 0) == 0;
}

bool TcpClient::last_error_is_reset() const { return last_error_ == ECONNRESET || last_error_ == EPIPE; }

std::string TcpClient::last_error_text() const { return errno_text(last_error_); }

}  // namespace ddp::platform
