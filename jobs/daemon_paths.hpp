#pragma once
// Where the daemon keeps its state and its socket, shared by the daemon and its clients.
#include <filesystem>

namespace ddp::jobs {

// $XDG_STATE_HOME/ddp-launch, or ~/.local/state/ddp-launch.
std::filesystem::path default_state_dir();
// $DDP_DAEMON_SOCKET, or $XDG_RUNTIME_DIR/ddp-launch/daemon.sock, or <state_dir>/daemon.sock.
std::filesystem::path default_socket_path(const std::filesystem::path& state_dir);

}  // namespace ddp::jobs
