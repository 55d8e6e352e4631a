#pragma once
// The HTTP API's routes (listed in api_server.hpp): a request → its response, or the stream it asks
// for (a followed log, the dashboard's live stream), which the connection then serves. Knows the
// job manager and the API's vocabulary (api_request.hpp); knows nothing of sockets or of who may ask
// (ApiServer's session and the dashboard's gate decided that before).
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

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

// Throws ApiError, JobError or JobSpecError for the session to answer (error_response).
RouteResult route_request(const HttpRequest& req, const Target& target, const RouteContext& ctx);

// {"error": message, "status": N, …detail}; 401 adds WWW-Authenticate: Bearer.
HttpResponse error_response(int status, const std::string& message, const nlohmann::json& detail = nullptr);
HttpResponse json_response(int status, const nlohmann::json& body);

}  // namespace ddp::jobs
