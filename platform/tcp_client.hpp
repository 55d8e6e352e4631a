#pragma once
// A client TCP connection whose every step has a deadline, for the synchronous store client
// (store/client.hpp): resolve, connect to one address, send everything, receive exactly n bytes,
// and a look between calls at whether the peer closed or sent something unasked. The socket is
// non-blocking; waits are poll (POSIX) or select (Windows) bounded by the deadline.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::platform {

// One resolved address, as the OS gave it (opaque bytes of its socket address).
struct TcpAddress {
  int family = 0;
  int socktype = 0;
  int protocol = 0;
  std::string sockaddr;
};

// Every address of host:port; empty, with `why` set, when the name does not resolve (which can be
// transient while a cluster comes up: callers retry).
std::vector<TcpAddress> resolve_tcp(const std::string& host, std::uint16_t port, std::string& why);

namespace detail {
// The list getaddrinfo (POSIX addrinfo) or GetAddrInfoW (Windows ADDRINFOW) returned, as
// TcpAddresses: both have the same fields, so each OS half of resolve_tcp calls this one loop.
template <class AddrInfo>
std::vector<TcpAddress> tcp_addresses(const AddrInfo* list) {
  std::vector<TcpAddress> out;
  for (auto* ai = list; ai; ai = ai->ai_next) {
    out.push_back({ai->ai_family, ai->ai_socktype, ai->ai_protocol,
                   std::string(reinterpret_cast<const char*>(ai->ai_addr), ai->ai_addrlen)});
  }
  return out;
}
}  // namespace detail

class TcpClient {
 public:
  using Clock = std::chrono::steady_clock;
  enum class Io { Ok, Timeout, Closed, Error };

  TcpClient() = default;
  ~TcpClient();
  TcpClient(TcpClient&& other) noexcept;
  TcpClient& operator=(TcpClient&& other) noexcept;
  TcpClient(const TcpClient&) = delete;
  TcpClient& operator=(const TcpClient&) = delete;

  // Connects to `address` before `deadline` (a SYN to a silent host is bounded by it), with
  // TCP_NODELAY. False, with `why` set and nothing open, when it was refused, unreachable or late.
  bool connect(const TcpAddress& address, Clock::time_point deadline, std::string& why);

  // Closed: the peer closed or reset the connection; Error: anything else (last_error_text()).
  Io send_all(std::string_view bytes, Clock::time_point deadline);
  Io recv_exact(char* p, std::size_t n, Clock::time_point deadline);

  // Between calls nothing may arrive: true when the connection is open and nothing is readable.
  bool idle_and_open() const;

  // The OS error behind the last Closed or Error (0 after a plain end of stream).
  int last_error() const { return last_error_; }
  bool last_error_is_reset() const;  // the connection was reset or the pipe broke
  std::string last_error_text() const;

  explicit operator bool() const;
  void close();

 private:
  std::intptr_t socket_ = -1;  // an fd, or a SOCKET
  int last_error_ = 0;
};

}  // namespace ddp::platform
