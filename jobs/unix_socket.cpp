#include "jobs/unix_socket.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>

#include "common/error.hpp"

namespace ddp::jobs {

namespace asio = boost::asio;
namespace fs = std::filesystem;

void remove_stale_socket(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;  // nothing there
  if (!S_ISSOCK(st.st_mode)) {
    const char* kind = S_ISREG(st.st_mode)   ? "a regular file"
                       : S_ISDIR(st.st_mode) ? "a directory"
                       : S_ISLNK(st.st_mode) ? "a symbolic link"
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
    ucred peer{};
    socklen_t len = sizeof(peer);
    bool known = ::getsockopt(probe.native_handle(), SOL_SOCKET, SO_PEERCRED, &peer, &len) == 0 && peer.pid > 0;
    throw UsageError(
        fmt::format("--socket {}: another daemon{} already listens there; stop it first, or give this "
                    "one its own --socket and --state-dir",
                    path.string(), known ? fmt::format(" (pid {})", peer.pid) : ""));
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
