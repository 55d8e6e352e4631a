#pragma once
// Where the daemon keeps its state and its socket, and where it says how to reach it: shared by the
// daemon and its clients.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "platform/pid.hpp"

namespace ddp::jobs {

// $XDG_STATE_HOME/ddp-launch, or %LOCALAPPDATA%\ddp-launch (Windows), or ~/.local/state/ddp-launch.
std::filesystem::path default_state_dir();
// $DDP_DAEMON_SOCKET, or $XDG_RUNTIME_DIR/ddp-launch/daemon.sock, or <state_dir>/daemon.sock.
std::filesystem::path default_socket_path(const std::filesystem::path& state_dir);

// <state_dir>/api.json: where the running daemon serves its API, written (private) once it listens:
// {"pid": N, "unix": PATH or null, "tcp": {"host": H, "port": P} or null}. How a client that is
// given only the state directory finds it (the Windows build's clients always: no unix socket).
std::filesystem::path api_file(const std::filesystem::path& state_dir);

struct TcpAddress {
  std::string host;  // a wildcard listener's (0.0.0.0, ::) is given as loopback
  std::uint16_t port = 0;
};
struct PublishedApi {
  pid_t pid = 0;
  std::optional<std::filesystem::path> socket;
  std::optional<TcpAddress> tcp;
};
// Throws ddp::Error naming the file when it cannot be written.
void write_api_file(const std::filesystem::path& file, const PublishedApi& api);
// nullopt when there is none; ddp::Error naming the file when it is not what write_api_file writes.
std::optional<PublishedApi> read_api_file(const std::filesystem::path& file);

// The bearer token in <state_dir>/token (this user's own file: platform::read_own_file); throws
// ddp::Error naming it when it cannot be read.
std::string read_token(const std::filesystem::path& state_dir);

}  // namespace ddp::jobs
