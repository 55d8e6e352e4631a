#pragma once
// ApiServer: the daemon's HTTP/1.1 JSON API (Boost.Beast) on a unix socket (mode 0600, no token)
// and, when asked, on TCP (every request but /healthz needs `Authorization: Bearer <token>`).
//
// The routes are api_routes.cpp's table (jobs/README.md lists it, checked by a unit test); /healthz
// is answered before the dashboard's gate.
// Errors are JSON {"error": "...", ...} with a 4xx status; the daemon keeps serving. TCP clients
// are admitted by ApiLimits (api_policy.hpp): a cap (503 beyond it) and a deadline for an
// authenticated request; the unix socket has neither. On TCP the web dashboard is served too, and
// every request passes its gate first (dashboard/gate.hpp: bearer token, or a browser session by
// a login link or the token; CSRF for a session's state-changing requests; the Host header). Every
// reply carries the dashboard's security headers and `Cache-Control: no-store` unless it says
// otherwise (job files, environments and logs stay out of browser caches); a HEAD is answered as
// its GET without the body.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "jobs/api_policy.hpp"
#include "jobs/dashboard/gate.hpp"
#include "jobs/dashboard/live_stream.hpp"
#include "jobs/job_manager.hpp"

namespace ddp::jobs {

inline constexpr std::size_t kMaxRequestBody = 1 << 20;  // a job file is a few KiB

class ApiServer {
 public:
  // What every session reads (lives as long as the server; sessions touch it only in handlers).
  struct Shared {
    explicit Shared(JobManager& jobs) : metrics(jobs) {}
    dashboard::MetricsCache metrics;  // the live streams' charts
    nlohmann::json daemon;            // GET /v1/daemon
    dashboard::Gate* gate = nullptr;  // with --listen: the unix socket's `ui` asks it for login links
  };

  ApiServer(boost::asio::io_context& io, JobManager& jobs, ApiLimits limits = {});
  // Whether this build serves the API on a unix socket (api_server_unix.cpp; the Windows build has
  // none: Boost 1.74's Asio has no AF_UNIX on Windows, and its clients use TCP with the token).
  static bool has_unix_socket();
  void listen_unix(const std::filesystem::path& path);  // creates the socket with mode 0600
  // Returns the bound port (port 0 picks one).
  std::uint16_t listen_tcp(const std::string& host, std::uint16_t port, std::string token);
  void stop();

 private:
  void accept_unix();
  void close_unix();
  void accept_tcp();
  void accept_later(void (ApiServer::*again)());
  void refuse_tcp(boost::asio::ip::tcp::socket& s);
  boost::asio::io_context& io_;
  JobManager& jobs_;
  ApiLimits limits_;
  std::shared_ptr<std::uint64_t> http_requests_ = std::make_shared<std::uint64_t>(0);  // GET /metrics
  std::shared_ptr<std::size_t> tcp_open_ = std::make_shared<std::size_t>(0);           // live TCP sessions
  bool tcp_full_logged_ = false;
  boost::asio::steady_timer accept_pause_;
  struct UnixAcceptor;                  // api_server_unix.cpp's
  std::shared_ptr<UnixAcceptor> unix_;  // shared_ptr: its type is complete only there
  std::optional<boost::asio::ip::tcp::acceptor> tcp_;
  std::optional<dashboard::Gate> gate_;  // with tcp_
  Shared shared_;
  std::filesystem::path unix_path_;
};

}  // namespace ddp::jobs
