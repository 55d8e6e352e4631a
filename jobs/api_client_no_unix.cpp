// ApiClient in a build without unix sockets (Windows: Boost 1.74's Asio has no AF_UNIX there):
// clients reach the daemon on TCP with its token (CMake picks this file or api_client_unix.cpp).
#include "jobs/api_client.hpp"

namespace ddp::jobs {

std::unique_ptr<ApiConnection> connect_unix(const std::filesystem::path&, std::string& why) {
  why =
      "this build has no unix sockets: its daemon is reached on TCP (--state-dir DIR, where the daemon "
      "writes api.json)";
  return nullptr;
}

}  // namespace ddp::jobs
