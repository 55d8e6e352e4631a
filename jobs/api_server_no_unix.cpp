// ApiServer's unix socket in a build without one (Windows: Boost 1.74's Asio has no AF_UNIX there):
// the API is served on TCP with the token alone (CMake picks this file or api_server_unix.cpp).
#include <fmt/format.h>

#include "common/error.hpp"
#include "jobs/api_server.hpp"

namespace ddp::jobs {

struct ApiServer::UnixAcceptor {};

bool ApiServer::has_unix_socket() { return false; }

void ApiServer::listen_unix(const std::filesystem::path& path) {
  throw UsageError(
      fmt::format("--socket {}: this build of the daemon has no unix socket; its API is on TCP "
                  "(--listen 127.0.0.1:PORT, the token in <state-dir>/token)",
                  path.string()));
}

void ApiServer::accept_unix() {}

void ApiServer::close_unix() {}

}  // namespace ddp::jobs
