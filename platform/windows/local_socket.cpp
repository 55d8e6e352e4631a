// platform/local_socket.hpp on Windows (AF_UNIX sockets, afunix.h's UNIX_PATH_MAX of 108 bytes).
#include "platform/local_socket.hpp"

namespace ddp::platform {

std::size_t local_socket_path_max() { return 107; }

std::optional<pid_t> local_socket_peer(std::intptr_t) { return std::nullopt; }

PrivateCreation::PrivateCreation() = default;
PrivateCreation::~PrivateCreation() = default;

}  // namespace ddp::platform
