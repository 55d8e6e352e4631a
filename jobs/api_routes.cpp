#include "jobs/api_routes.hpp"

#include <fmt/format.h>

#include "jobs/daemon_metrics.hpp"
#include "jobs/run_logs.hpp"

namespace ddp::jobs {

namespace http = boost::beast::http;
using json = nlohmann::json;

namespace {

// Request targets and job files are the client's bytes: never let invalid UTF-8 break a reply.
std::string safe_dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n"; }

HttpResponse text_response(std::string json_text) {
  HttpResponse res{http::status::ok, 11};
  res.set(http::field::content_type, "application/json");
  res.body() = std::move(json_text);
  return res;
}

RouteResult reply(HttpResponse res) {
  RouteResult r;
  r.response = std::move(res);
  return r;
}

void require_method(const HttpRequest& req, http::verb verb) {
  if (req.method() != verb) {
    throw ApiError(405, fmt::format("{} is not allowed here; use {}", std::string(req.method_string()),
                                    std::string(http::to_string(verb))));
  }
}

std::string file_name(const HttpRequest& req) {
  std::string file = std::string(req["X-Ddp-File"]);
  return file.empty() || file.size() > 256 ? "<request body>" : file;
}

// POST /v1/jobs/validate: what POST /v1/jobs would say of this job file, without submitting it.
// A refusal is the answer here, not a failed request: 200 {"ok": false, "error", "problems"}.
RouteResult validate(const HttpRequest& req, JobManager& jobs) {
  require_method(req, http::verb::post);
  std::optional<ApiError> refusal;
  try {
    return reply(json_response(200, {{"ok", true}, {"job", jobs.validate(req.body(), file_name(req))}}));
  } catch (const JobSpecError& e) {
    refusal = api_error_of(e);
  } catch (const JobError& e) {
    refusal = api_error_of(e);
  }
  json body{{"ok", false}, {"status", refusal->status}, {"error", refusal->message}, {"problems", json::array()}};
  if (refusal->detail.is_object()) body.update(refusal->detail);
  return reply(json_response(200, body));
}

RouteResult list(const Target& t, JobManager& jobs) {
  std::optional<JobState> state;
  if (auto it = t.query.find("state"); it != t.query.end() && !it->second.empty()) {
    state = parse_state_param(it->second);
  }
  std::size_t limit = 100;
  if (auto it = t.query.find("limit"); it != t.query.end()) {
    if (it->second.empty() || it->second.size() > 6 ||
        it->second.find_first_not_of("0123456789") != std::string::npos) {
      throw ApiError(400, fmt::format("limit '{}' is not a number from 1 to 100000", it->second));
    }
    limit = std::stoul(it->second);
  }
  return reply(text_response(jobs.views().list_text(state, limit)));
}

RouteResult logs(JobId id, const Target& t, JobManager& jobs) {
  if (!jobs.views().exists(id))
    throw ApiError(404, fmt::format("no job with id {} (ddp-launch list shows the jobs)", id));
  auto q = [&](const char* k, const char* def) {
    auto it = t.query.find(k);
    return it == t.query.end() ? std::string(def) : it->second;
  };
  std::string rank = q("rank", "0");
  std::string stream = q("stream", "stdout");
  check_log_source(rank, stream);
  auto follow = q("follow", "0");
  if (follow == "1" || follow == "true") {
    RouteResult r;
    r.kind = RouteResult::Kind::FollowLog;
    r.job = id;
    r.rank = rank;
    r.stream = stream;
    return r;
  }
  auto path = jobs.views().log_path(id, rank, stream);
  if (!path) {
    if (jobs.views().is_finished(id)) {
      throw ApiError(
          404, fmt::format("job {} ended without a {} log for rank {} (try --rank supervisor)", id, stream, rank));
    }
    throw ApiError(404,
                   fmt::format("job {} has no {} log for rank {} yet; add follow=1 to wait for it", id, stream, rank));
  }
  HttpResponse res{http::status::ok, 11};
  res.set(http::field::content_type, "text/plain; charset=utf-8");
  res.body() = read_file_tail(*path, 16u << 20);
  return reply(std::move(res));
}

// ---------------------------------------------------------------------------------------------
// The handlers of the table below.

RouteResult get_jobs(const HttpRequest&, const Target& t, const RouteContext& ctx, JobId) { return list(t, ctx.jobs); }

RouteResult post_jobs(const HttpRequest& req, const Target&, const RouteContext& ctx, JobId) {
  return reply(json_response(201, ctx.jobs.submit(req.body(), file_name(req))));
}

RouteResult post_validate(const HttpRequest& req, const Target&, const RouteContext& ctx, JobId) {
  return validate(req, ctx.jobs);
}

RouteResult get_job(const HttpRequest&, const Target&, const RouteContext& ctx, JobId id) {
  return reply(text_response(ctx.jobs.views().get_text(id)));
}

RouteResult post_cancel(const HttpRequest&, const Target&, const RouteContext& ctx, JobId id) {
  return reply(json_response(202, ctx.jobs.cancel(id)));
}

RouteResult get_events(const HttpRequest&, const Target&, const RouteContext& ctx, JobId id) {
  return reply(json_response(200, ctx.jobs.views().events(id)));
}

RouteResult get_logs(const HttpRequest&, const Target& t, const RouteContext& ctx, JobId id) {
  return logs(id, t, ctx.jobs);
}

RouteResult get_job_metrics(const HttpRequest&, const Target&, const RouteContext& ctx, JobId id) {
  return reply(json_response(200, ctx.jobs.views().job_metrics(id)));
}

RouteResult get_host(const HttpRequest&, const Target&, const RouteContext& ctx, JobId) {
  return reply(json_response(200, ctx.jobs.views().host()));
}

RouteResult get_daemon(const HttpRequest&, const Target&, const RouteContext& ctx, JobId) {
  return reply(json_response(200, ctx.daemon));
}

RouteResult post_login_link(const HttpRequest&, const Target&, const RouteContext& ctx, JobId) {
  if (!ctx.gate) {
    throw ApiError(409,
                   "the daemon serves no TCP address, so no dashboard: restart it with `ddp-launch daemon "
                   "--listen 127.0.0.1:8470` (any HOST:PORT)");
  }
  auto now = std::chrono::steady_clock::now();
  auto code = ctx.gate->mint_login_code(now);
  return reply(json_response(
      201, {{"code", code},
            {"expires_in_s", std::chrono::duration_cast<std::chrono::seconds>(ctx.gate->login_link_ttl()).count()}}));
}

RouteResult get_metrics(const HttpRequest&, const Target&, const RouteContext& ctx, JobId) {
  HttpResponse res{http::status::ok, 11};
  res.set(http::field::content_type, "text/plain; version=0.0.4");
  res.body() = prometheus_text(ctx.jobs.views().counts(), ctx.http_requests);
  return reply(std::move(res));
}

// ApiServer answers it before the dashboard's gate (no token); here for route_request's other callers.
RouteResult get_healthz(const HttpRequest&, const Target&, const RouteContext&, JobId) {
  return reply(json_response(200, {{"ok", true}}));
}

RouteResult get_live(const HttpRequest&, const Target& t, const RouteContext& ctx, JobId) {
  RouteResult r;
  r.kind = RouteResult::Kind::Live;
  r.view = dashboard::parse_live_view(t.query);
  if (r.view.kind == dashboard::LiveView::Kind::Job && !ctx.jobs.views().exists(r.view.job)) {
    throw ApiError(404, fmt::format("no job with id {} (ddp-launch list shows the jobs)", r.view.job));
  }
  return r;
}

std::vector<std::string_view> pattern_segments(std::string_view pattern) {
  std::vector<std::string_view> out;
  while (!pattern.empty()) {
    pattern.remove_prefix(1);  // the '/'
    auto end = pattern.find('/');
    out.push_back(pattern.substr(0, end));
    pattern = end == std::string_view::npos ? std::string_view() : pattern.substr(end);
  }
  return out;
}

// Whether the path's segments fit the pattern's ("{id}" fits any); `literal`: without an {id}.
bool fits(const Route& route, const std::vector<std::string>& segments, bool& literal) {
  auto want = pattern_segments(route.pattern);
  if (want.size() != segments.size()) return false;
  literal = true;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (want[i] == "{id}") {
      literal = false;
    } else if (want[i] != segments[i]) {
      return false;
    }
  }
  return true;
}

}  // namespace

HttpResponse error_response(int status, const std::string& message, const json& detail) {
  json body{{"error", message}, {"status", status}};
  if (detail.is_object()) {
    for (auto& [k, v] : detail.items()) body[k] = v;
  }
  HttpResponse res{static_cast<http::status>(status), 11};
  res.set(http::field::content_type, "application/json");
  if (status == 401) res.set(http::field::www_authenticate, "Bearer");
  res.body() = safe_dump(body);
  return res;
}

HttpResponse json_response(int status, const json& body) {
  HttpResponse res{static_cast<http::status>(status), 11};
  res.set(http::field::content_type, "application/json");
  res.body() = safe_dump(body);
  return res;
}

const std::vector<Route>& api_routes() {
  using v = http::verb;
  static const std::vector<Route> routes{
      {v::get, "/v1/jobs", "the jobs, newest first: `?state=S&limit=N`", get_jobs},
      {v::post, "/v1/jobs", "body: a job file (`X-Ddp-File` names it in errors) → `201` the job", post_jobs},
      {v::post, "/v1/jobs/validate", "what `POST /v1/jobs` would refuse, not submitted → `200 {ok, error, problems}`",
       post_validate},
      {v::get, "/v1/jobs/{id}", "the job, with its spec, run directory, stragglers and hangs", get_job},
      {v::post, "/v1/jobs/{id}/cancel", "→ `202` the job (`CANCELLING` or `CANCELLED`)", post_cancel},
      {v::get, "/v1/jobs/{id}/events", "its state transitions and supervisor events", get_events},
      {v::get, "/v1/jobs/{id}/logs",
       "a rank's log: `?rank=N&stream=stdout&follow=1` (rank: a number or `supervisor`; stream: `stdout` or `stderr`)",
       get_logs},
      {v::get, "/v1/jobs/{id}/metrics", "the values its `metrics` regexes found in each rank's output",
       get_job_metrics},
      {v::get, "/v1/host", "slots, GPUs and their jobs, the queue, jobs by state", get_host},
      {v::get, "/v1/daemon", "pid, state directory, TCP address (`ddp-launch ui`)", get_daemon},
      {v::post, "/v1/dashboard/login-link", "→ `201 {code, expires_in_s}`: a one-time login (`ddp-launch ui`)",
       post_login_link},
      {v::get, "/metrics", "Prometheus text", get_metrics},
      {v::get, "/healthz", "`{\"ok\": true}`, without a token", get_healthz},
      {v::get, "/ui/events", "the dashboard's live stream (Server-Sent Events): `?view=…`", get_live},
  };
  return routes;
}

const Route& find_route(const HttpRequest& req, const Target& t, JobId& id) {
  const auto& s = t.segments;
  std::vector<const Route*> literal, with_id;
  for (const auto& route : api_routes()) {
    bool is_literal = false;
    if (fits(route, s, is_literal)) (is_literal ? literal : with_id).push_back(&route);
  }
  const bool under_jobs = s.size() >= 2 && s[0] == "v1" && s[1] == "jobs";
  const auto& candidates = literal.empty() ? with_id : literal;
  id = 0;
  if (candidates.empty()) {
    if (!under_jobs) {
      throw ApiError(404, fmt::format("no such endpoint: {} (see GET /v1/jobs, POST /v1/jobs, /metrics)",
                                      std::string(req.target())));
    }
    if (s.size() >= 3) parse_id(s[2]);  // a path under /v1/jobs/ names a job first: 400 for a bad id
    throw ApiError(404, fmt::format("no such endpoint: {}", std::string(req.target())));
  }
  if (literal.empty()) id = parse_id(s[2]);  // every {id} is the third segment: /v1/jobs/{id}…
  for (const auto* route : candidates) {
    if (route->verb == req.method()) return *route;
  }
  require_method(req, candidates.front()->verb);  // throws the 405
  return *candidates.front();
}

RouteResult route_request(const HttpRequest& req, const Target& t, const RouteContext& ctx) {
  JobId id = 0;
  const auto& route = find_route(req, t, id);
  return route.handler(req, t, ctx, id);
}

}  // namespace ddp::jobs
