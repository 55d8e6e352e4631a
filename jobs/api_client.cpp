#include "jobs/api_client.hpp"

#include <fmt/format.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/error.hpp"
#include "jobs/api_client_io.hpp"

namespace ddp::jobs {

namespace asio = boost::asio;

std::string ApiAddress::describe() const { return socket.empty() ? fmt::format("{}:{}", host, port) : socket.string(); }

ApiClient::ApiClient(std::filesystem::path socket) : ApiClient(ApiAddress{std::move(socket), {}, 0, {}}) {}

ApiClient::ApiClient(ApiAddress address) : address_(std::move(address)) {
  std::string why;
  if (!address_.socket.empty()) {
    connection_ = connect_unix(address_.socket, why);
    if (!connection_) {
      throw Error(
          fmt::format("no ddp-launch daemon listens on {} ({}). Start one with `ddp-launch daemon` (it "
                      "prints the socket it listens on), or point at it with --socket PATH or "
                      "$DDP_DAEMON_SOCKET",
                      address_.socket.string(), why));
    }
    return;
  }
  auto io = std::make_unique<asio::io_context>();
  asio::ip::tcp::resolver resolver(*io);
  auto tcp = std::make_unique<client_io::ApiConnectionOf<asio::ip::tcp::socket>>(std::move(io));
  boost::system::error_code ec;
  auto found = resolver.resolve(address_.host, std::to_string(address_.port), ec);
  if (!ec) asio::connect(tcp->socket(), found, ec);
  if (ec) {
    throw Error(
        fmt::format("no ddp-launch daemon listens on {} ({}). Start one with `ddp-launch daemon` (it writes "
                    "where it listens to <state-dir>/api.json), or point at its state directory with --state-dir",
                    address_.describe(), ec.message()));
  }
  connection_ = std::move(tcp);
}

ApiClient::~ApiClient() = default;

ApiConnection::Headers ApiClient::with_token(const ApiConnection::Headers& headers) const {
  auto all = headers;
  if (address_.socket.empty() && !address_.token.empty()) all.emplace_back("Authorization", "Bearer " + address_.token);
  return all;
}

ApiReply ApiClient::request(std::string_view method, std::string_view target, std::string body,
                            const std::vector<std::pair<std::string, std::string>>& headers) {
  return connection_->request(method, target, std::move(body), with_token(headers), address_.describe());
}

ApiReply ApiClient::stream(std::string_view target, const std::function<void(std::string_view)>& on_data) {
  return connection_->stream(target, with_token({}), on_data, address_.describe());
}

}  // namespace ddp::jobs
