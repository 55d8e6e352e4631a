// ApiClient's unix socket connection, in the builds whose Asio has local sockets (CMake picks this
// file or api_client_no_unix.cpp).
#include <boost/asio/local/stream_protocol.hpp>

#include "jobs/api_client_io.hpp"

namespace ddp::jobs {

std::unique_ptr<ApiConnection> connect_unix(const std::filesystem::path& path, std::string& why) {
  using Socket = boost::asio::local::stream_protocol::socket;
  auto connection = std::make_unique<client_io::ApiConnectionOf<Socket>>(std::make_unique<boost::asio::io_context>());
  boost::system::error_code ec;
  connection->socket().connect(boost::asio::local::stream_protocol::endpoint(path.string()), ec);
  if (ec) {
    why = ec.message();
    return nullptr;
  }
  return connection;
}

}  // namespace ddp::jobs
