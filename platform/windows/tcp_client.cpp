#include "platform/tcp_client.hpp"

// The Windows headers need this order (winsock2 and ws2tcpip before windows.h).
#include <fmt/format.h>
#include <windows.h>
#include <winsock2.h>
#include <ws2tcpip.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <system_error>

#include "platform/windows/wide.hpp"

namespace ddp::platform {
namespace {

using Clock = TcpClient::Clock;

// Winsock needs WSAStartup once per process before its first call; never undone (process-long).
void start_winsock() {
  static std::once_flag once;
  std::call_once(once, [] {
    WSADATA data;
    WSAStartup(MAKEWORD(2, 2), &data);
  });
}

SOCKET as_socket(std::intptr_t s) { return static_cast<SOCKET>(s); }

// Waits until `s` is readable (or closed), writable or connected (or failed) before the deadline.
// select, not WSAPoll: WSAPoll did not report failed connects before Windows 10 2004.
bool wait_ready(SOCKET s, bool for_write, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - Clock::now()).count();
    if (left < 0) left = 0;
    timeval tv{static_cast<long>(left / 1000000), static_cast<long>(left % 1000000)};
    fd_set rd, wr, ex;
    FD_ZERO(&rd);
    FD_ZERO(&wr);
    FD_ZERO(&ex);
    FD_SET(s, for_write ? &wr : &rd);
    FD_SET(s, &ex);  // a failed non-blocking connect is reported here
    int n = ::select(0, &rd, &wr, &ex, &tv);
    if (n > 0) return true;
    if (n == 0) {
      if (Clock::now() >= deadline) return false;
      continue;
    }
    throw std::system_error(WSAGetLastError(), std::system_category(), "select");
  }
}

bool is_reset(int err) { return err == WSAECONNRESET || err == WSAECONNABORTED || err == WSAESHUTDOWN; }

}  // namespace

std::vector<TcpAddress> resolve_tcp(const std::string& host, std::uint16_t port, std::string& why) {
  start_winsock();
  ADDRINFOW hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  ADDRINFOW* list = nullptr;
  auto service = std::to_wstring(port);
  int rc = ::GetAddrInfoW(win::to_wide(host).c_str(), service.c_str(), &hints, &list);
  if (rc != 0) {
    why = fmt::format("cannot resolve {}: {}", host, win::error_text(static_cast<DWORD>(rc)));
    return {};
  }
  std::unique_ptr<ADDRINFOW, decltype(&::FreeAddrInfoW)> owner(list, &::FreeAddrInfoW);
  return detail::tcp_addresses(list);
}

TcpClient::operator bool() const { return as_socket(socket_) != INVALID_SOCKET; }

void TcpClient::close() {
  if (*this) ::closesocket(as_socket(socket_));
  socket_ = -1;
}

bool TcpClient::connect(const TcpAddress& address, Clock::time_point deadline, std::string& why) {
  start_winsock();
  close();
  // WSA_FLAG_NO_HANDLE_INHERIT: the socket is not inherited by workers we start (O_CLOEXEC).
  SOCKET s = ::WSASocketW(address.family, address.socktype, address.protocol, nullptr, 0,
                          WSA_FLAG_OVERLAPPED | WSA_FLAG_NO_HANDLE_INHERIT);
  if (s == INVALID_SOCKET) {
    why = "socket: " + win::error_text(static_cast<DWORD>(WSAGetLastError()));
    return false;
  }
  socket_ = static_cast<std::intptr_t>(s);
  u_long nonblocking = 1;
  ::ioctlsocket(s, FIONBIO, &nonblocking);
  sockaddr_storage sa{};
  std::memcpy(&sa, address.sockaddr.data(), std::min(address.sockaddr.size(), sizeof(sa)));
  if (::connect(s, reinterpret_cast<const sockaddr*>(&sa), static_cast<int>(address.sockaddr.size())) != 0) {
    int err = WSAGetLastError();
    if (err != WSAEWOULDBLOCK) {
      why = win::error_text(static_cast<DWORD>(err));
      close();
      return false;
    }
    if (!wait_ready(s, true, deadline)) {
      why = "connect did not complete in time";
      close();
      return false;
    }
    int so_error = 0;
    int len = sizeof(so_error);
    ::getsockopt(s, SOL_SOCKET, SO_ERROR, reinterpret_cast<char*>(&so_error), &len);
    if (so_error != 0) {
      why = win::error_text(static_cast<DWORD>(so_error));
      close();
      return false;
    }
  }
  BOOL one = TRUE;
  ::setsockopt(s, IPPROTO_TCP, TCP_NODELAY, reinterpret_cast<const char*>(&one), sizeof(one));
  return true;
}

TcpClient::Io TcpClient::send_all(std::string_view bytes, Clock::time_point deadline) {
  const SOCKET s = as_socket(socket_);
  last_error_ = 0;
  while (!bytes.empty()) {
    int chunk = static_cast<int>(std::min<std::size_t>(bytes.size(), 1 << 30));
    int n = ::send(s, bytes.data(), chunk, 0);
    if (n != SOCKET_ERROR) {
      bytes.remove_prefix(static_cast<std::size_t>(n));
      continue;
    }
    int err = WSAGetLastError();
    if (err == WSAEINTR) continue;
    if (err != WSAEWOULDBLOCK) {
      last_error_ = err;
      return is_reset(err) ? Io::Closed : Io::Error;
    }
    if (!wait_ready(s, true, deadline)) return Io::Timeout;
  }
  return Io::Ok;
}

TcpClient::Io TcpClient::recv_exact(char* p, std::size_t n, Clock::time_point deadline) {
  const SOCKET s = as_socket(socket_);
  last_error_ = 0;
  while (n > 0) {
    int got = ::recv(s, p, static_cast<int>(std::min<std::size_t>(n, 1 << 30)), 0);
    if (got > 0) {
      p += got;
      n -= static_cast<std::size_t>(got);
      continue;
    }
    if (got == 0) return Io::Closed;
    int err = WSAGetLastError();
    if (err == WSAEINTR) continue;
    if (err != WSAEWOULDBLOCK) {
      last_error_ = err;
      return is_reset(err) ? Io::Closed : Io::Error;
    }
    if (!wait_ready(s, false, deadline)) return Io::Timeout;
  }
  return Io::Ok;
}

bool TcpClient::idle_and_open() const {
  const SOCKET s = as_socket(socket_);
  fd_set rd, ex;
  FD_ZERO(&rd);
  FD_ZERO(&ex);
  FD_SET(s, &rd);
  FD_SET(s, &ex);
  timeval zero{0, 0};
  return ::select(0, &rd, nullptr, &ex, &zero) == 0;
}

bool TcpClient::last_error_is_reset() const { return is_reset(last_error_); }

std::string TcpClient::last_error_text() const { return win::error_text(static_cast<DWORD>(last_error_)); }

}  // namespace ddp::platform
