#pragma once
// ApiConnection over one kind of connected stream socket (TCP, or a unix socket where the build has
// one): the HTTP exchange itself. Internal to api_client.cpp and api_client_unix.cpp.
#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <limits>

#include "common/error.hpp"
#include "jobs/api_client.hpp"

namespace ddp::jobs::client_io {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

template <class Socket>
class ApiConnectionOf : public ApiConnection {
 public:
  explicit ApiConnectionOf(std::unique_ptr<boost::asio::io_context> io) : io_(std::move(io)), socket_(*io_) {}
  Socket& socket() { return socket_; }

  ApiReply request(std::string_view method, std::string_view target, std::string body, const Headers& headers,
                   const std::string& where) override {
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
      http::write(socket_, req, write_error);
      if (write_error && write_error != asio::error::broken_pipe && write_error != asio::error::connection_reset) {
        throw boost::system::system_error(write_error);
      }
      http::response_parser<http::string_body> parser;
      parser.body_limit(256u << 20);
      http::read(socket_, buffer_, parser);
      auto res = parser.release();
      return {static_cast<int>(res.result_int()), std::move(res.body())};
    } catch (const boost::system::system_error& e) {
      throw Error(fmt::format("the daemon on {} broke off the request {} {}: {}", where, method, target,
                              (write_error ? write_error : e.code()).message()));
    }
  }

  ApiReply stream(std::string_view target, const Headers& headers, const std::function<void(std::string_view)>& on_data,
                  const std::string& where) override {
    http::request<http::empty_body> req{http::verb::get, beast::string_view(target.data(), target.size()), 11};
    req.set(http::field::host, "localhost");
    req.set(http::field::user_agent, "ddp-launch");
    for (const auto& [k, v] : headers) req.set(k, v);
    try {
      http::write(socket_, req);
      http::response_parser<http::buffer_body> parser;
      parser.body_limit(std::numeric_limits<std::uint64_t>::max());  // a followed log has no end
      http::read_header(socket_, buffer_, parser);
      int status = static_cast<int>(parser.get().result_int());
      std::string error_body;
      char buf[64 * 1024];
      while (!parser.is_done()) {
        parser.get().body().data = buf;
        parser.get().body().size = sizeof buf;
        boost::system::error_code ec;
        http::read_some(socket_, buffer_, parser, ec);  // what arrived, not a full buffer
        if (ec == http::error::need_buffer) ec = {};
        if (ec) throw boost::system::system_error(ec);
        auto got = sizeof buf - parser.get().body().size;
        if (got && status < 400) on_data(std::string_view(buf, got));
        if (got && status >= 400) error_body.append(buf, got);
      }
      return {status, std::move(error_body)};
    } catch (const boost::system::system_error& e) {
      throw Error(fmt::format("the daemon on {} broke off {}: {}", where, target, e.code().message()));
    }
  }

 private:
  std::unique_ptr<boost::asio::io_context> io_;
  Socket socket_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace ddp::jobs::client_io
