// The platform-independent part of platform/tcp_client.hpp: ownership of the socket. Closing it
// is the OS half's close().
#include "platform/tcp_client.hpp"

#include <utility>

namespace ddp::platform {

TcpClient::~TcpClient() { close(); }

TcpClient::TcpClient(TcpClient&& other) noexcept
    : socket_(std::exchange(other.socket_, -1)), last_error_(other.last_error_) {}

TcpClient& TcpClient::operator=(TcpClient&& other) noexcept {
  if (this != &other) {
    close();
    socket_ = std::exchange(other.socket_, -1);
    last_error_ = other.last_error_;
  }
  return *this;
}

}  // namespace ddp::platform
