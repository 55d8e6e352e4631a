#include "jobs/api_server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstring>
#include <filesystem>
#include <map>

#include "common/error.hpp"
#include "jobs/api_request.hpp"
#include "jobs/api_routes.hpp"
#include "jobs/api_session.hpp"
#include "jobs/dashboard/harden.hpp"
#include "jobs/log_follower.hpp"
#include "jobs/run_logs.hpp"
#include "jobs/tcp_slot.hpp"
#include "platform/host.hpp"

namespace ddp::jobs {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace fs = std::filesystem;
using json = nlohmann::json;
using session::random_hex;
using session::Session;
using session::TcpAdmission;

ApiServer::ApiServer(asio::io_context& io, JobManager& jobs, ApiLimits limits)
    : io_(io), jobs_(jobs), limits_(limits), accept_pause_(io), shared_(jobs) {
  shared_.daemon = {
      {"pid", platform::current_pid()}, {"state_dir", jobs.config().state_dir.string()}, {"tcp", nullptr}};
}

std::uint16_t ApiServer::listen_tcp(const std::string& host, std::uint16_t port, std::string token) {
  tcp_.emplace(io_);
  asio::ip::tcp::endpoint ep(asio::ip::make_address(host), port);
  tcp_->open(ep.protocol());
  tcp_->set_option(asio::socket_base::reuse_address(true));
  boost::system::error_code ec;
  tcp_->bind(ep, ec);
  if (ec) throw Error(fmt::format("cannot listen on {}:{}: {}", host, port, ec.message()));
  tcp_->listen();
  auto bound = tcp_->local_endpoint().port();
  gate_.emplace(std::move(token), bound, ep.address().is_loopback(), random_hex);
  shared_.gate = &*gate_;
  shared_.daemon["tcp"] = {{"host", host}, {"port", bound}};
  accept_tcp();
  return bound;
}

// Out of descriptors (EMFILE): accepting again at once would spin; wait for sessions to close.
void ApiServer::accept_later(void (ApiServer::*again)()) {
  spdlog::warn("API: cannot accept connections (out of file descriptors?); retrying in 100 ms");
  accept_pause_.expires_after(std::chrono::milliseconds(100));
  accept_pause_.async_wait([this, again](boost::system::error_code ec) {
    if (!ec) (this->*again)();
  });
}

void ApiServer::accept_tcp() {
  tcp_->async_accept([this](boost::system::error_code ec, asio::ip::tcp::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) return accept_later(&ApiServer::accept_tcp);
    if (*tcp_open_ >= limits_.max_tcp_connections) {
      refuse_tcp(s);
    } else {
      tcp_full_logged_ = false;
      boost::system::error_code nec;
      s.set_option(asio::ip::tcp::no_delay(true), nec);
      std::make_shared<Session<asio::ip::tcp::socket>>(
          std::move(s), jobs_, http_requests_, shared_,
          TcpAdmission{TcpSlot(tcp_open_), limits_.tcp_auth_timeout, &*gate_})
          ->start();
    }
    accept_tcp();
  });
}

// Over the cap: a short 503 written without waiting (a fresh socket's buffer always takes it),
// then closed, so the descriptor is free again at once.
void ApiServer::refuse_tcp(asio::ip::tcp::socket& s) {
  if (!tcp_full_logged_) {
    spdlog::warn("API: {} TCP connections open (--max-tcp-connections): refusing new ones until some close",
                 *tcp_open_);
    tcp_full_logged_ = true;
  }
  auto res = error_response(503, fmt::format("too many connections: the daemon serves at most {} TCP clients at "
                                             "once (--max-tcp-connections); retry later",
                                             limits_.max_tcp_connections));
  res.set(http::field::server, "ddp-launch");
  res.set(http::field::retry_after, "1");
  res.keep_alive(false);
  res.prepare_payload();
  boost::system::error_code ec;
  s.non_blocking(true, ec);
  http::write(s, res, ec);
  s.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  s.close(ec);
}

void ApiServer::stop() {
  boost::system::error_code ec;
  accept_pause_.cancel();
  close_unix();
  if (tcp_) tcp_->close(ec);
}

}  // namespace ddp::jobs
