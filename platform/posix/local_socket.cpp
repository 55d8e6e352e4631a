// platform/local_socket.hpp on POSIX.
#include "platform/local_socket.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

namespace ddp::platform {

std::size_t local_socket_path_max() { return sizeof(sockaddr_un::sun_path) - 1; }

std::optional<pid_t> local_socket_peer(std::intptr_t native_socket) {
  ucred peer{};
  socklen_t len = sizeof(peer);
  if (::getsockopt(static_cast<int>(native_socket), SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0 || peer.pid <= 0)
    return std::nullopt;
  return peer.pid;
}

PrivateCreation::PrivateCreation() : saved_(::umask(0077)) {}
PrivateCreation::~PrivateCreation() { ::umask(static_cast<mode_t>(saved_)); }

}  // namespace ddp::platform
