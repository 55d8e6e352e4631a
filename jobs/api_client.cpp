#include "jobs/api_client.hpp"

#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <limits>

#include "common/error.hpp"

namespace ddp::jobs {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct ApiClient::Impl {
  asio::io_context io;
  asio::local::stream_protocol::socket socket{io};
  beast::flat_buffer buffer;
};

ApiClient::ApiClient(std::filesystem::path socket) : impl_(std::make_unique<Impl>()), socket_(std::move(socket)) {
  boost::system::error_code ec;
  impl_->socket.connect(asio::local::stream_protocol::endpoint(socket_.string()), ec);
  if (ec) {
    throw Error(
        fmt::format("no ddp-launch daemon listens on {} ({}). Start one with `ddp-launch daemon` (it "
                    "prints the socket it listens on), or point at it with --socket PATH or "
                    "$DDP_DAEMON_SOCKET",
                    socket_.string(), ec.message()));
  }
}

ApiClient::~ApiClient() = default;

ApiReply ApiClient::request(std::string_view method, std::string_view target, std::string body,
                            const std::vector<std::pair<std::string, std::string>>& headers) {
  http::request<http::string_body> req{http::string_to_verb(beast::string_view(method.data(), method.size())),
                                       beast::string_view(target.data(), target.size()), 11};
  req.set(http::field::host, "localhost");
  req.set(http::field::user_agent, "ddp-launch");
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = std::move(body);
  req.prepare_payload();
  boost::system::error_code write_error;
  try {
    // A daemon that refuses a request early (413: a body over its limit) answers and hangs up
    // while the body is still being sent: the write fails with "Broken pipe", but its answer,
    // which says why, is there to read.
    http::write(impl_->socket, req, write_error);
    if (write_error && write_error != asio::error::broken_pipe && write_error != asio::error::connection_reset) {
      throw boost::system::system_error(write_error);
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(256u << 20);
    http::read(impl_->socket, impl_->buffer, parser);
    auto res = parser.release();
    return {static_cast<int>(res.result_int()), std::move(res.body())};
  } catch (const boost::system::system_error& e) {
    throw Error(fmt::format("the daemon on {} broke off the request {} {}: {}", socket_.string(), method, target,
                            (write_error ? write_error : e.code()).message()));
  }
}

ApiReply ApiClient::stream(std::string_view target, const std::function<void(std::string_view)>& on_data) {
  http::request<http::empty_body> req{http::verb::get, beast::string_view(target.data(), target.size()), 11};
  req.set(http::field::host, "localhost");
  req.set(http::field::user_agent, "ddp-launch");
  try {
    http::write(impl_->socket, req);
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // a followed log has no end
    http::read_header(impl_->socket, impl_->buffer, parser);
    int status = static_cast<int>(parser.get().result_int());
    std::string error_body;
    char buf[64 * 1024];
    while (!parser.is_done()) {
      parser.get().body().data = buf;
      parser.get().body().size = sizeof buf;
      boost::system::error_code ec;
      http::read_some(impl_->socket, impl_->buffer, parser, ec);  // what arrived, not a full buffer
      if (ec == http::error::need_buffer) ec = {};
      if (ec) throw boost::system::system_error(ec);
      auto got = sizeof buf - parser.get().body().size;
      if (got && status < 400) on_data(std::string_view(buf, got));
      if (got && status >= 400) error_body.append(buf, got);
    }
    return {status, std::move(error_body)};
  } catch (const boost::system::system_error& e) {
    throw Error(fmt::format("the daemon on {} broke off {}: {}", socket_.string(), target, e.code().message()));
  }
}

}  // namespace ddp::jobs
