#pragma once
// The daemon's local (unix) stream socket, beyond what Asio's local::stream_protocol says: how long
// its path may be, who is at the other end, and a socket file born private.
// POSIX: sizeof(sockaddr_un::sun_path); SO_PEERCRED; umask(0077) while it is bound.
// Windows (AF_UNIX, afunix.h): 108 bytes; no peer credentials; the directory's ACL governs.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "platform/pid.hpp"

namespace ddp::platform {

// The longest path a local socket can be bound to, in bytes (without the terminating NUL).
std::size_t local_socket_path_max();

// The pid of the process at the other end of the connected local socket `native_socket` (Asio's
// native_handle()), or nullopt when the OS will not say.
std::optional<pid_t> local_socket_peer(std::intptr_t native_socket);

// While one lives, the files and sockets this process creates are private to its user (POSIX:
// umask 0077, restored after; Windows: nothing to do). Process-wide: for a bind on the main thread.
class PrivateCreation {
 public:
  PrivateCreation();
  ~PrivateCreation();
  PrivateCreation(const PrivateCreation&) = delete;
  PrivateCreation& operator=(const PrivateCreation&) = delete;

 private:
  unsigned saved_ = 0;
};

}  // namespace ddp::platform
