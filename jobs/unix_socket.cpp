#include "jobs/unix_socket.hpp"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include "common/error.hpp"
#include "platform/local_socket.hpp"

namespace ddp::jobs {

namespace asio = boost::asio;
namespace fs = std::filesystem;

void remove_stale_socket(const fs::path& path) {
  std::error_code sec;
  const auto type = fs::symlink_status(path, sec).type();
  if (sec || type == fs::file_type::not_found) return;  // nothing there
  if (type != fs::file_type::socket) {
    const char* kind = type == fs::file_type::regular     ? "a regular file"
                       : type == fs::file_type::directory ? "a directory"
                       : type == fs::file_type::symlink   ? "a symbolic link"
                                                          : "not a socket";
    throw UsageError(
        fmt::format("--socket {} is {}: the daemon replaces only a stale socket a stopped daemon "
                    "left there; move it away or give another --socket",
                    path.string(), kind));
  }
  asio::io_context io;
  asio::local::stream_protocol::socket probe(io);
  boost::system::error_code cec;
  probe.connect(asio::local::stream_protocol::endpoint(path.string()), cec);
  if (!cec) {
    auto peer = platform::local_socket_peer(static_cast<std::intptr_t>(probe.native_handle()));
    throw UsageError(
        fmt::format("--socket {}: another daemon{} already listens there; stop it first, or give this "
                    "one its own --socket and --state-dir",
                    path.string(), peer ? fmt::format(" (pid {})", *peer) : ""));
  }
  if (cec != asio::error::connection_refused) {
    throw UsageError(
        fmt::format("--socket {}: cannot tell whether a daemon still answers on this socket ({}); "
                    "remove it if it is stale, or give another --socket",
                    path.string(), cec.message()));
  }
  std::error_code ec;
  fs::remove(path, ec);  // stale: its daemon is gone
}

}  // namespace ddp::jobs
