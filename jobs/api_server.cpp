#include "jobs/api_server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <array>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <filesystem>
#include <fstream>
#include <map>

#include "common/error.hpp"
#include "jobs/api_request.hpp"
#include "jobs/daemon_metrics.hpp"
#include "jobs/run_logs.hpp"
#include "jobs/unix_socket.hpp"

namespace ddp::jobs {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr auto kIdleTimeout = std::chrono::seconds(60);

// Request targets and job files are the client's bytes: never let invalid UTF-8 break a reply.
std::string safe_dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

// A TCP session's place in the count of live TCP connections (ApiLimits::max_tcp_connections)
// and its deadline for an authenticated request. Unix sessions have neither.
struct TcpAdmission {
  std::shared_ptr<std::size_t> open;  // decremented when the session is gone
  std::chrono::milliseconds auth_timeout{0};
};

template <class Socket>
class Session : public std::enable_shared_from_this<Session<Socket>> {
 public:
  Session(Socket socket, JobManager& jobs, std::shared_ptr<std::uint64_t> http_requests, const std::string* token,
          TcpAdmission tcp = {})
      : socket_(std::move(socket)),
        jobs_(jobs),
        http_requests_(std::move(http_requests)),
        token_(token),
        tcp_(std::move(tcp)),
        idle_(socket_.get_executor()) {
    if (tcp_.open) ++*tcp_.open;
  }
  // No end_follow() here: the io_context may outlive the JobManager at shutdown; the callbacks
  // left behind by a session that was not closed hold only weak pointers to it.
  ~Session() {
    if (tcp_.open) --*tcp_.open;
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  void start() { read_request(); }

 private:
  using Response = http::response<http::string_body>;

  void read_request() {
    parser_.emplace();
    parser_->body_limit(kMaxRequestBody);
    parser_->header_limit(16 * 1024);
    // Until it has authenticated, a TCP client gets a short deadline: idle connections that never
    // say who they are must not hold descriptors for a minute each.
    idle_.expires_after(token_ && !authenticated_ ? tcp_.auth_timeout : kIdleTimeout);
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
                  true);
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

  Response error_response(int status, const std::string& message, const json& detail = nullptr) {
    json body{{"error", message}, {"status", status}};
    if (detail.is_object()) {
      for (auto& [k, v] : detail.items()) body[k] = v;
    }
    Response res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, "application/json");
    if (status == 401) res.set(http::field::www_authenticate, "Bearer");
    res.body() = safe_dump(body);
    return res;
  }

  Response json_response(int status, const json& body) {
    Response res{static_cast<http::status>(status), 11};
    res.set(http::field::content_type, "application/json");
    res.body() = safe_dump(body);
    return res;
  }

  Response text_response(std::string json_text) {
    Response res{http::status::ok, 11};
    res.set(http::field::content_type, "application/json");
    res.body() = std::move(json_text);
    return res;
  }

  void handle(http::request<http::string_body>& req) {
    bool keep_alive = req.keep_alive();
    Response res;
    try {
      auto t = parse_target(std::string_view(req.target().data(), req.target().size()));
      if (t.segments == std::vector<std::string>{"healthz"}) {
        res = json_response(200, {{"ok", true}});
      } else {
        if (token_) {
          auto auth = std::string(req[http::field::authorization]);
          auto presented = bearer_credentials(auth);
          if (!presented || !constant_time_equal(*presented, *token_)) {
            keep_alive = false;  // a client that failed to authenticate gets no second try on this connection
            if (auth.empty())
              throw ApiError(401,
                             "this TCP endpoint needs 'Authorization: Bearer <token>' (the token "
                             "is in the daemon's state directory, file 'token')");
            throw ApiError(401, "invalid bearer token");
          }
          authenticated_ = true;
        }
        if (route(req, t, res)) return;  // a streamed response took over
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

  static void require_method(const http::request<http::string_body>& req, http::verb verb) {
    if (req.method() != verb) {
      throw ApiError(405, fmt::format("{} is not allowed here; use {}", std::string(req.method_string()),
                                      std::string(http::to_string(verb))));
    }
  }

  // Fills `res`; returns true when it started a streamed (chunked) response instead.
  bool route(http::request<http::string_body>& req, const Target& t, Response& res) {
    const auto& s = t.segments;
    if (s == std::vector<std::string>{"metrics"}) {
      require_method(req, http::verb::get);
      res = Response{http::status::ok, 11};
      res.set(http::field::content_type, "text/plain; version=0.0.4");
      res.body() = prometheus_text(jobs_.counts(), *http_requests_);
      return false;
    }
    if (s.size() < 2 || s[0] != "v1" || s[1] != "jobs") {
      throw ApiError(404, fmt::format("no such endpoint: {} (see GET /v1/jobs, POST /v1/jobs, /metrics)",
                                      std::string(req.target())));
    }
    if (s.size() == 2) {
      if (req.method() == http::verb::post) {
        std::string file = std::string(req["X-Ddp-File"]);
        if (file.empty() || file.size() > 256) file = "<request body>";
        res = json_response(201, jobs_.submit(req.body(), file));
        return false;
      }
      require_method(req, http::verb::get);
      std::optional<JobState> state;
      if (auto it = t.query.find("state"); it != t.query.end() && !it->second.empty()) {
        state = parse_state(it->second);
        if (!state)
          throw ApiError(400, fmt::format("state '{}' is not one of PENDING, STARTING, RUNNING, RESTARTING, "
                                          "CANCELLING, SUCCEEDED, FAILED, CANCELLED",
                                          it->second));
      }
      std::size_t limit = 100;
      if (auto it = t.query.find("limit"); it != t.query.end()) {
        if (it->second.empty() || it->second.size() > 6 ||
            it->second.find_first_not_of("0123456789") != std::string::npos) {
          throw ApiError(400, fmt::format("limit '{}' is not a number from 1 to 100000", it->second));
        }
        limit = std::stoul(it->second);
      }
      res = text_response(jobs_.list_text(state, limit));
      return false;
    }
    JobId id = parse_id(s[2]);
    if (s.size() == 3) {
      require_method(req, http::verb::get);
      res = text_response(jobs_.get_text(id));
      return false;
    }
    if (s.size() == 4 && s[3] == "cancel") {
      require_method(req, http::verb::post);
      res = json_response(202, jobs_.cancel(id));
      return false;
    }
    if (s.size() == 4 && s[3] == "events") {
      require_method(req, http::verb::get);
      res = json_response(200, jobs_.events(id));
      return false;
    }
    if (s.size() == 4 && s[3] == "metrics") {
      require_method(req, http::verb::get);
      res = json_response(200, jobs_.job_metrics(id));
      return false;
    }
    if (s.size() == 4 && s[3] == "logs") {
      require_method(req, http::verb::get);
      return logs(id, t, res);
    }
    throw ApiError(404, fmt::format("no such endpoint: {}", std::string(req.target())));
  }

  bool logs(JobId id, const Target& t, Response& res) {
    if (!jobs_.exists(id)) throw ApiError(404, fmt::format("no job with id {} (ddp-launch list shows the jobs)", id));
    auto q = [&](const char* k, const char* def) {
      auto it = t.query.find(k);
      return it == t.query.end() ? std::string(def) : it->second;
    };
    std::string rank = q("rank", "0");
    std::string stream = q("stream", "stdout");
    if (rank != "supervisor" &&
        (rank.empty() || rank.size() > 6 || rank.find_first_not_of("0123456789") != std::string::npos)) {
      throw ApiError(400, fmt::format("rank '{}' is not a rank number or 'supervisor'", rank));
    }
    if (stream != "stdout" && stream != "stderr") {
      throw ApiError(400, fmt::format("stream '{}' is not stdout or stderr", stream));
    }
    auto follow = q("follow", "0");
    if (follow == "1" || follow == "true") {
      start_follow(id, rank, stream);
      return true;
    }
    auto path = jobs_.log_path(id, rank, stream);
    if (!path) {
      if (jobs_.is_finished(id)) {
        throw ApiError(
            404, fmt::format("job {} ended without a {} log for rank {} (try --rank supervisor)", id, stream, rank));
      }
      throw ApiError(
          404, fmt::format("job {} has no {} log for rank {} yet; add follow=1 to wait for it", id, stream, rank));
    }
    res = Response{http::status::ok, 11};
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    res.body() = read_file_tail(*path, 16u << 20);
    return false;
  }

  void send(Response res, bool close_after) {
    res.keep_alive(!close_after);
    res.set(http::field::server, "ddp-launch");
    res.prepare_payload();
    auto sp = std::make_shared<Response>(std::move(res));
    http::async_write(socket_, *sp,
                      [self = this->shared_from_this(), sp, close_after](beast::error_code ec, std::size_t) {
                        if (ec || close_after) return self->close();
                        self->read_request();
                      });
  }

  // --- log follow: chunked text/plain until the job is over ----------------------------------

  void start_follow(JobId id, std::string rank, std::string stream) {
    follow_id_ = id;
    follow_rank_ = std::move(rank);
    follow_stream_ = std::move(stream);
    auto res = std::make_shared<http::response<http::empty_body>>(http::status::ok, 11);
    res->set(http::field::content_type, "text/plain; charset=utf-8");
    res->set(http::field::server, "ddp-launch");
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
    if (!file_.is_open()) {
      if (auto p = jobs_.log_path(follow_id_, follow_rank_, follow_stream_)) open_log(*p);
    }
    chunk_.clear();
    if (file_.is_open()) {
      file_.clear();
      chunk_.resize(64 * 1024);
      file_.read(chunk_.data(), static_cast<std::streamsize>(chunk_.size()));
      chunk_.resize(static_cast<std::size_t>(file_.gcount()));
    }
    if (chunk_.empty() && file_.is_open()) {
      // All of this file is sent: a restart (the supervisor's next attempt, or the daemon's next
      // run) writes the rank's output to a new file from here on.
      auto p = jobs_.log_path(follow_id_, follow_rank_, follow_stream_);
      if (p && *p != file_path_) {
        open_log(*p);
        chunk_ = fmt::format("[ddp-launch]: the job restarted; following {}\n", p->string());
      }
    }
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
    if (jobs_.is_finished(follow_id_)) {
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

  void open_log(const std::filesystem::path& p) {
    if (file_watch_) jobs_.inotify().unwatch(*file_watch_);
    file_watch_.reset();
    file_.close();
    file_.clear();
    file_.open(p, std::ios::binary);
    file_path_ = p;
    std::weak_ptr<Session> weak = this->shared_from_this();
    file_watch_ = jobs_.inotify().watch(p, [weak] {
      if (auto s = weak.lock()) s->pump();
    });
  }

  void end_follow() {
    if (subscription_) jobs_.unsubscribe(*subscription_);
    subscription_.reset();
    if (file_watch_) jobs_.inotify().unwatch(*file_watch_);
    file_watch_.reset();
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
  const std::string* token_;                      // non-null: bearer token required (TCP)
  TcpAdmission tcp_;
  bool authenticated_ = false;
  asio::steady_timer idle_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  // follow
  JobId follow_id_ = 0;
  std::string follow_rank_, follow_stream_;
  std::optional<int> subscription_, file_watch_;
  std::ifstream file_;
  std::filesystem::path file_path_;
  std::string chunk_;
  bool writing_ = false, pump_again_ = false, follow_done_ = false;
  std::array<char, 256> discard_{};
};

}  // namespace

ApiServer::ApiServer(asio::io_context& io, JobManager& jobs, ApiLimits limits)
    : io_(io), jobs_(jobs), limits_(limits), accept_pause_(io) {}

void ApiServer::listen_unix(const fs::path& path) {
  using proto = asio::local::stream_protocol;
  if (path.string().size() >= sizeof(sockaddr_un::sun_path)) {
    throw UsageError(
        fmt::format("socket path {} is {} bytes, over the {}-byte limit of unix sockets; choose a "
                    "shorter --socket",
                    path.string(), path.string().size(), sizeof(sockaddr_un::sun_path) - 1));
  }
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  remove_stale_socket(path);
  auto old = ::umask(0077);  // the socket is born 0600: no window in which others may connect
  unix_.emplace(io_);
  unix_->open();
  boost::system::error_code bec;
  unix_->bind(proto::endpoint(path.string()), bec);
  ::umask(old);
  if (bec) throw Error(fmt::format("cannot listen on {}: {}", path.string(), bec.message()));
  ::chmod(path.c_str(), 0600);
  unix_->listen();
  unix_path_ = path;
  accept_unix();
}

std::uint16_t ApiServer::listen_tcp(const std::string& host, std::uint16_t port, std::string token) {
  token_ = std::move(token);
  tcp_.emplace(io_);
  asio::ip::tcp::endpoint ep(asio::ip::make_address(host), port);
  tcp_->open(ep.protocol());
  tcp_->set_option(asio::socket_base::reuse_address(true));
  boost::system::error_code ec;
  tcp_->bind(ep, ec);
  if (ec) throw Error(fmt::format("cannot listen on {}:{}: {}", host, port, ec.message()));
  tcp_->listen();
  accept_tcp();
  return tcp_->local_endpoint().port();
}

// Out of descriptors (EMFILE): accepting again at once would spin; wait for sessions to close.
void ApiServer::accept_later(void (ApiServer::*again)()) {
  spdlog::warn("API: cannot accept connections (out of file descriptors?); retrying in 100 ms");
  accept_pause_.expires_after(std::chrono::milliseconds(100));
  accept_pause_.async_wait([this, again](boost::system::error_code ec) {
    if (!ec) (this->*again)();
  });
}

void ApiServer::accept_unix() {
  unix_->async_accept([this](boost::system::error_code ec, asio::local::stream_protocol::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) return accept_later(&ApiServer::accept_unix);
    std::make_shared<Session<asio::local::stream_protocol::socket>>(std::move(s), jobs_, http_requests_, nullptr)
        ->start();
    accept_unix();
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
      std::make_shared<Session<asio::ip::tcp::socket>>(std::move(s), jobs_, http_requests_, &token_,
                                                       TcpAdmission{tcp_open_, limits_.tcp_auth_timeout})
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
  http::response<http::string_body> res{http::status::service_unavailable, 11};
  res.set(http::field::content_type, "application/json");
  res.set(http::field::server, "ddp-launch");
  res.set(http::field::retry_after, "1");
  res.keep_alive(false);
  res.body() = safe_dump({{"error", fmt::format("too many connections: the daemon serves at most {} TCP clients at "
                                                "once (--max-tcp-connections); retry later",
                                                limits_.max_tcp_connections)},
                          {"status", 503}});
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
  if (unix_) unix_->close(ec);
  if (tcp_) tcp_->close(ec);
  if (!unix_path_.empty()) {
    std::error_code rec;
    fs::remove(unix_path_, rec);
  }
}

}  // namespace ddp::jobs
