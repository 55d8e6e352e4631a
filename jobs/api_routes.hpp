#pragma once
// The HTTP API's routes, as a table (api_routes()): a request → its response, or the stream it asks
// for (a followed log, the dashboard's live stream), which the connection then serves. jobs/README.md
// lists the table (HTTP API), checked by tests/unit/jobs/test_api_routes.cpp. Knows the
// job manager and the API's vocabulary (api_request.hpp); knows nothing of sockets or of who may ask
// (ApiServer's session and the dashboard's gate decided that before).
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "jobs/api_request.hpp"
#include "jobs/dashboard/gate.hpp"
#include "jobs/dashboard/live_frames.hpp"
#include "jobs/job_manager.hpp"

namespace ddp::jobs {

using HttpRequest = boost::beast::http::request<boost::beast::http::string_body>;
using HttpResponse = boost::beast::http::response<boost::beast::http::string_body>;

struct RouteResult {
  enum class Kind { Reply, FollowLog, Live };
  Kind kind = Kind::Reply;
  HttpResponse response;  // Reply
  JobId job = 0;          // FollowLog: this job's rank log, chunked until the job is over
  std::string rank, stream;
  dashboard::LiveView view;  // Live: Server-Sent Events (dashboard/live_stream.hpp)
};

struct RouteContext {
  JobManager& jobs;
  std::uint64_t http_requests;   // so far, for GET /metrics
  const nlohmann::json& daemon;  // GET /v1/daemon
  dashboard::Gate* gate;         // POST /v1/dashboard/login-link; nullptr without --listen
};

// One route: its method, its path ("{id}": a job id), what it answers (one line: the docs' table)
// and its handler (`id`: the path's job id, 0 without one).
struct Route {
  boost::beast::http::verb verb;
  std::string_view pattern;
  std::string_view summary;
  RouteResult (*handler)(const HttpRequest& req, const Target& target, const RouteContext& ctx, JobId id);
};

// Every route, in the order they are matched (a literal segment before {id}; a path's first route
// names the method a 405 asks for).
const std::vector<Route>& api_routes();

// The route of the request's path and method. Throws ApiError: 400 for a path whose job id is not
// one, 404 for no route, 405 for a path whose routes take another method.
const Route& find_route(const HttpRequest& req, const Target& target, JobId& id);

// Throws ApiError, JobError or JobSpecError for the session to answer (error_response).
RouteResult route_request(const HttpRequest& req, const Target& target, const RouteContext& ctx);

// {"error": message, "status": N, …detail}; 401 adds WWW-Authenticate: Bearer.
HttpResponse error_response(int status, const std::string& message, const nlohmann::json& detail = nullptr);
HttpResponse json_response(int status, const nlohmann::json& body);

}  // namespace ddp::jobs
