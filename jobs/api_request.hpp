#pragma once
// The API layer's vocabulary, pure: an error as the client sees it (HTTP status + JSON), the
// mapping from the job manager's domain errors to it, and the request target's parts.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jobs/job_errors.hpp"
#include "jobs/job_spec.hpp"
#include "jobs/job_state.hpp"
#include "jobs/scheduler.hpp"

namespace ddp::jobs {

// An API-level failure: HTTP status + message (the daemon answers it as JSON). `message` is the
// whole text: what() is a C string, cut at the first NUL a client's bytes may have put in it.
struct ApiError : std::runtime_error {
  ApiError(int s, const std::string& m, nlohmann::json d = nullptr)
      : std::runtime_error(m), status(s), message(m), detail(std::move(d)) {}
  int status;
  std::string message;
  nlohmann::json detail;
};

int http_status_of(JobErrorKind kind);  // NotFound 404, Conflict 409, DoesNotFit 422
ApiError api_error_of(const JobError& e);
ApiError api_error_of(const JobSpecError& e);  // 400, with every problem's line and column

// A request target: "/v1/jobs/3/logs?rank=1" → {v1, jobs, 3, logs}, {rank: 1}; percent-decoded.
struct Target {
  std::vector<std::string> segments;
  std::map<std::string, std::string> query;
};
Target parse_target(std::string_view target);
std::string percent_decode(const std::string& s);

// A job id path segment; ApiError 400 when it is not one.
JobId parse_id(const std::string& s);

// A `state` query parameter (any case); ApiError 400 naming the states.
JobState parse_state_param(const std::string& value);
// A log's `rank` (a number or "supervisor") and `stream` (stdout or stderr); ApiError 400 otherwise.
void check_log_source(const std::string& rank, const std::string& stream);

// RFC 9112 §6.1, from a request's Transfer-Encoding field (empty when absent): a list that does
// not end in chunked has no determinable body (400); a coding before chunked is 501.
std::optional<std::pair<int, std::string>> transfer_coding_problem(const std::string& field);

}  // namespace ddp::jobs
