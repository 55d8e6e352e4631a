#pragma once
// One HTTP session of the daemon's API over a connected stream socket (TCP, or the unix socket
// where the build has one): read a request, route it, answer, follow logs. Internal to
// api_server.cpp and api_server_unix.cpp (which instantiate it for their sockets).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/ip/tcp.hpp>
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
#include "jobs/api_server.hpp"
#include "jobs/dashboard/harden.hpp"
#include "jobs/log_follower.hpp"
#include "jobs/run_logs.hpp"
#include "jobs/tcp_slot.hpp"
#include "platform/host.hpp"

namespace ddp::jobs::session {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace fs = std::filesystem;
using json = nlohmann::json;

inline constexpr auto kIdleTimeout = std::chrono::seconds(60);

// A TCP session's place in the count of live TCP connections (ApiLimits::max_tcp_connections),
// its deadline for an authenticated request and the dashboard's gate. Unix sessions have none.
struct TcpAdmission {
  TcpSlot slot;
  std::chrono::milliseconds auth_timeout{0};
  dashboard::Gate* gate = nullptr;
};

// n hex digits from the kernel's CSPRNG: the dashboard's session secrets.
inline std::string random_hex(std::size_t n) {
  std::string bytes;
  try {
    bytes = platform::random_bytes((n + 1) / 2);
  } catch (const std::exception& e) {
    throw Error(fmt::format("no random bytes for a dashboard session: {}", e.what()));
  }
  std::string out;
  for (unsigned char c : bytes) out += fmt::format("{:02x}", c);
  out.resize(n);
  return out;
}

// The parts of a request the dashboard's gate judges.
inline dashboard::WebRequest web_request(const http::request<http::string_body>& req) {
  auto field = [&](auto name) {
    auto v = req[name];
    return std::string_view(v.data(), v.size());
  };
  return {std::string_view(req.method_string().data(), req.method_string().size()),
          std::string_view(req.target().data(), req.target().size()),
          field(http::field::host),
          field(http::field::cookie),
          field(http::field::authorization),
          field("X-CSRF-Token"),
          field(http::field::origin),
          field(http::field::if_none_match),
          req.body()};
}

template <class Socket>
class Session : public std::enable_shared_from_this<Session<Socket>> {
 public:
  Session(Socket socket, JobManager& jobs, std::shared_ptr<std::uint64_t> http_requests, ApiServer::Shared& shared,
          TcpAdmission tcp = {})
      : socket_(std::move(socket)),
        jobs_(jobs),
        http_requests_(std::move(http_requests)),
        shared_(shared),
        tcp_(std::move(tcp)),
        auth_deadline_(std::chrono::steady_clock::now() + tcp_.auth_timeout),
        idle_(socket_.get_executor()) {}
  // No follower close() here: the io_context may outlive the JobManager at shutdown; the callbacks
  // left behind by a session that was not closed hold only weak pointers to it.
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() { read_request(); }

 private:
  using Response = HttpResponse;

  void read_request() {
    parser_.emplace();
    parser_->body_limit(kMaxRequestBody);
    parser_->header_limit(16 * 1024);
    // Until it has authenticated, a TCP client has one deadline, counted from its connection (not
    // from its last request: fetching the login page or a file every few seconds must not hold a
    // place in --max-tcp-connections for ever).
    if (tcp_.gate && !authenticated_) {
      idle_.expires_at(auth_deadline_);
    } else {
      idle_.expires_after(kIdleTimeout);
    }
    idle_.async_wait([weak = this->weak_from_this()](boost::system::error_code ec) {
      if (ec) return;
      if (auto self = weak.lock()) self->close();  // a client that sends nothing is dropped
    });
    http::async_read(socket_, buffer_, *parser_,
                     [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    idle_.cancel();
    if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::operation_aborted ||
        ec == asio::error::connection_reset || !socket_.is_open()) {
      return close();
    }
    if (ec == http::error::body_limit) {
      return send(error_response(413, fmt::format("request body over {} bytes: a job file is much smaller than that",
                                                  kMaxRequestBody)),
                  true, /*linger=*/true);
    }
    if (ec == http::error::header_limit) return send(error_response(431, "request headers over 16 KiB"), true);
    if (ec) return send(error_response(400, "malformed HTTP request: " + ec.message()), true);
    auto req = parser_->release();
    ++*http_requests_;
    if (auto bad = transfer_coding_problem(std::string(req[http::field::transfer_encoding]))) {
      return send(error_response(bad->first, bad->second), true);
    }
    try {
      handle(req);
    } catch (const std::exception& e) {  // whatever one request does, the daemon keeps serving
      spdlog::error("API: dropping a connection after an unexpected error: {}", e.what());
      close();
    }
  }

  void handle(http::request<http::string_body>& req) {
    bool keep_alive = req.keep_alive();
    // HEAD is its GET without the body (RFC 9110 §9.3.2): a body after a HEAD's headers would be
    // read as the start of the next response on this connection.
    head_ = req.method() == http::verb::head;
    if (head_) req.method(http::verb::get);
    Response res;
    try {
      auto t = parse_target(std::string_view(req.target().data(), req.target().size()));
      if (t.segments == std::vector<std::string>{"healthz"}) {
        res = json_response(200, {{"ok", true}});
      } else {
        if (tcp_.gate && admit(req, keep_alive)) return;  // the gate answered (a page, a file, a redirect)
        auto r = route_request(req, t, {jobs_, *http_requests_, shared_.daemon, shared_.gate});
        if (head_ && r.kind != RouteResult::Kind::Reply) {
          r = {};
          r.response = error_response(405, "a stream has no HEAD; use GET");
          r.response.set(http::field::allow, "GET");
        }
        switch (r.kind) {
          case RouteResult::Kind::Reply: res = std::move(r.response); break;
          case RouteResult::Kind::FollowLog: return start_follow(r.job, r.rank, r.stream);
          case RouteResult::Kind::Live:
            idle_.cancel();
            return dashboard::start_live_stream(std::move(socket_), jobs_, shared_.metrics, r.view,
                                                std::move(tcp_.slot), session_still_open());
        }
      }
    } catch (const ApiError& e) {
      res = error_response(e.status, e.message, e.detail);
    } catch (const JobSpecError& e) {  // the manager's domain errors, answered as the API layer maps them
      auto api = api_error_of(e);
      res = error_response(api.status, api.message, api.detail);
    } catch (const JobError& e) {
      auto api = api_error_of(e);
      res = error_response(api.status, api.message, api.detail);
    } catch (const std::exception& e) {
      spdlog::error("API: {} {}: {}", std::string(req.method_string()), std::string(req.target()), e.what());
      res = error_response(500, std::string("internal error: ") + e.what());
    }
    send(std::move(res), !keep_alive);
  }

  // TCP: the dashboard's gate. True when it answered (a page, a file, a redirect); false when the
  // API serves the request; throws its refusal.
  bool admit(http::request<http::string_body>& req, bool& keep_alive) {
    auto a = tcp_.gate->admit(web_request(req), std::chrono::steady_clock::now());
    if (a.authenticated) authenticated_ = true;
    session_ = std::move(a.session);
    switch (a.kind) {
      case dashboard::Admission::Kind::Reply:
        if (a.reply.status == 401) keep_alive = false;  // a wrong token or login link: no second try here
        send_web(std::move(a.reply), !keep_alive);
        return true;
      case dashboard::Admission::Kind::Refused:
        if (a.status == 401) keep_alive = false;  // a client that failed to authenticate gets no second try here
        throw ApiError(a.status, a.message);
      case dashboard::Admission::Kind::Api: return false;
    }
    return false;
  }

  // A live stream opened by a browser session lasts as long as the session: a logout (or its expiry)
  // ends it. One opened with the bearer token lasts as long as its connection.
  dashboard::StillAllowed session_still_open() const {
    if (session_.empty()) return {};
    return
        [gate = tcp_.gate, session = session_](dashboard::TimePoint now) { return gate->session_open(session, now); };
  }

  void send_web(dashboard::WebReply reply, bool close_after) {
    Response res{static_cast<http::status>(reply.status), 11};
    for (auto& [k, v] : reply.headers) res.set(k, v);
    res.body() = std::move(reply.body);
    send(std::move(res), close_after);
  }

  // linger: the client may still be sending the request's body (413): read and drop it for a
  // while after the answer (linger_then_close) instead of closing at once.
  void send(Response res, bool close_after, bool linger = false) {
    res.keep_alive(!close_after);
    res.set(http::field::server, "ddp-launch");
    dashboard::harden(res);
    res.prepare_payload();
    if (head_) {
      auto length = res.body().size();
      res.body().clear();
      if (res.find(http::field::content_length) != res.end()) res.content_length(length);
    }
    auto sp = std::make_shared<Response>(std::move(res));
    http::async_write(socket_, *sp,
                      [self = this->shared_from_this(), sp, close_after, linger](beast::error_code ec, std::size_t) {
                        if (ec) return self->close();
                        if (close_after) return linger ? self->linger_then_close() : self->close();
                        self->read_request();
                      });
  }

  // After an early answer to a client still sending its body (413): stop sending, then read and
  // drop what it sends for up to kLinger before closing. Closing at once failed the client's write
  // ("Broken pipe") before it read the answer, and over TCP the reset could discard the answer.
  static constexpr auto kLinger = std::chrono::seconds(2);
  void linger_then_close() {
    boost::system::error_code ec;
    socket_.shutdown(Socket::shutdown_send, ec);
    idle_.expires_after(kLinger);
    idle_.async_wait([weak = this->weak_from_this()](boost::system::error_code e) {
      if (e) return;
      if (auto self = weak.lock()) self->close();
    });
    drain();
  }
  void drain() {
    auto chunk = std::make_shared<std::array<char, 64 * 1024>>();
    socket_.async_read_some(asio::buffer(*chunk),
                            [self = this->shared_from_this(), chunk](beast::error_code ec, std::size_t) {
                              if (ec) return self->close();  // the client is done (EOF), or the linger timer closed it
                              self->drain();
                            });
  }

  // --- log follow: chunked text/plain until the job is over ----------------------------------

  void start_follow(JobId id, std::string rank, std::string stream) {
    follow_id_ = id;
    follower_.emplace(jobs_, id, std::move(rank), std::move(stream), [weak_self = this->weak_from_this()] {
      if (auto s = weak_self.lock()) s->pump();
    });
    auto res = std::make_shared<http::response<http::empty_body>>(http::status::ok, 11);
    res->set(http::field::content_type, "text/plain; charset=utf-8");
    res->set(http::field::server, "ddp-launch");
    dashboard::harden(*res);
    res->keep_alive(false);
    res->chunked(true);
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    http::async_write_header(socket_, *sr,
                             [self = this->shared_from_this(), res, sr](beast::error_code ec, std::size_t) {
                               if (ec) return self->close();
                               std::weak_ptr<Session> weak = self;
                               self->subscription_ = self->jobs_.subscribe(self->follow_id_, [weak] {
                                 if (auto s = weak.lock()) s->pump();
                               });
                               self->watch_client_close();
                               self->pump();
                             });
  }

  // A follower that hangs up is noticed even while its log is quiet.
  void watch_client_close() {
    socket_.async_read_some(asio::buffer(discard_),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->close();
                              self->watch_client_close();
                            });
  }

  void pump() {
    if (follow_done_ || !socket_.is_open()) return;
    if (writing_) {
      pump_again_ = true;
      return;
    }
    chunk_ = follower_->next(64 * 1024);
    if (!chunk_.empty()) {
      writing_ = true;
      asio::async_write(socket_, http::make_chunk(asio::buffer(chunk_)),
                        [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                          self->writing_ = false;
                          if (ec) return self->close();
                          self->pump();
                        });
      return;
    }
    if (jobs_.views().is_finished(follow_id_)) {
      follow_done_ = true;
      end_follow();
      asio::async_write(socket_, http::make_chunk_last(),
                        [self = this->shared_from_this()](beast::error_code, std::size_t) { self->close(); });
      return;
    }
    if (pump_again_) {
      pump_again_ = false;
      pump();
    }
  }

  void end_follow() {
    if (subscription_) jobs_.unsubscribe(*subscription_);
    subscription_.reset();
    if (follower_) follower_->close();
  }

  void close() {
    end_follow();
    idle_.cancel();
    boost::system::error_code ec;
    socket_.shutdown(Socket::shutdown_both, ec);
    socket_.close(ec);
  }

  Socket socket_;
  JobManager& jobs_;
  std::shared_ptr<std::uint64_t> http_requests_;  // the server's, counted by every session
  ApiServer::Shared& shared_;
  TcpAdmission tcp_;  // TCP only: its gate (every request passes it) and its place in the cap
  bool authenticated_ = false;
  std::chrono::steady_clock::time_point auth_deadline_;  // TCP: an authenticated request by then, or closed
  std::string session_;                                  // the dashboard session of the last request, if any
  bool head_ = false;                                    // the request being answered is a HEAD
  asio::steady_timer idle_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  // follow
  JobId follow_id_ = 0;
  std::optional<LogFollower> follower_;
  std::optional<int> subscription_;
  std::string chunk_;
  bool writing_ = false, pump_again_ = false, follow_done_ = false;
  std::array<char, 256> discard_{};
};

}  // namespace ddp::jobs::session
