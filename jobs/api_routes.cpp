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
  return reply(text_response(jobs.list_text(state, limit)));
}

RouteResult logs(JobId id, const Target& t, JobManager& jobs) {
  if (!jobs.exists(id)) throw ApiError(404, fmt::format("no job with id {} (ddp-launch list shows the jobs)", id));
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
  auto path = jobs.log_path(id, rank, stream);
  if (!path) {
    if (jobs.is_finished(id)) {
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

RouteResult route_request(const HttpRequest& req, const Target& t, const RouteContext& ctx) {
  auto& jobs = ctx.jobs;
  const auto& s = t.segments;
  if (s == std::vector<std::string>{"metrics"}) {
    require_method(req, http::verb::get);
    HttpResponse res{http::status::ok, 11};
    res.set(http::field::content_type, "text/plain; version=0.0.4");
    res.body() = prometheus_text(jobs.counts(), ctx.http_requests);
    return reply(std::move(res));
  }
  if (s == std::vector<std::string>{"ui", "events"}) {
    require_method(req, http::verb::get);
    RouteResult r;
    r.kind = RouteResult::Kind::Live;
    r.view = dashboard::parse_live_view(t.query);
    if (r.view.kind == dashboard::LiveView::Kind::Job && !jobs.exists(r.view.job)) {
      throw ApiError(404, fmt::format("no job with id {} (ddp-launch list shows the jobs)", r.view.job));
    }
    return r;
  }
  if (s == std::vector<std::string>{"v1", "host"}) {
    require_method(req, http::verb::get);
    return reply(json_response(200, jobs.host()));
  }
  if (s == std::vector<std::string>{"v1", "daemon"}) {
    require_method(req, http::verb::get);
    return reply(json_response(200, ctx.daemon));
  }
  if (s == std::vector<std::string>{"v1", "dashboard", "login-link"}) {
    require_method(req, http::verb::post);
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
  if (s.size() < 2 || s[0] != "v1" || s[1] != "jobs") {
    throw ApiError(404, fmt::format("no such endpoint: {} (see GET /v1/jobs, POST /v1/jobs, /metrics)",
                                    std::string(req.target())));
  }
  if (s.size() == 2) {
    if (req.method() == http::verb::post) return reply(json_response(201, jobs.submit(req.body(), file_name(req))));
    require_method(req, http::verb::get);
    return list(t, jobs);
  }
  if (s.size() == 3 && s[2] == "validate") return validate(req, jobs);
  JobId id = parse_id(s[2]);
  if (s.size() == 3) {
    require_method(req, http::verb::get);
    return reply(text_response(jobs.get_text(id)));
  }
  if (s.size() == 4 && s[3] == "cancel") {
    require_method(req, http::verb::post);
    return reply(json_response(202, jobs.cancel(id)));
  }
  if (s.size() == 4 && s[3] == "events") {
    require_method(req, http::verb::get);
    return reply(json_response(200, jobs.events(id)));
  }
  if (s.size() == 4 && s[3] == "metrics") {
    require_method(req, http::verb::get);
    return reply(json_response(200, jobs.job_metrics(id)));
  }
  if (s.size() == 4 && s[3] == "logs") {
    require_method(req, http::verb::get);
    return logs(id, t, jobs);
  }
  throw ApiError(404, fmt::format("no such endpoint: {}", std::string(req.target())));
}

}  // namespace ddp::jobs
