#include "jobs/api_request.hpp"

#include <fmt/format.h>

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <cctype>

namespace ddp::jobs {

namespace http = boost::beast::http;

int http_status_of(JobErrorKind kind) {
  switch (kind) {
    case JobErrorKind::NotFound: return 404;
    case JobErrorKind::Conflict: return 409;
    case JobErrorKind::DoesNotFit: return 422;
    case JobErrorKind::Unavailable: return 503;
  }
  return 500;
}

ApiError api_error_of(const JobError& e) { return ApiError(http_status_of(e.kind), e.message); }

ApiError api_error_of(const JobSpecError& e) {
  nlohmann::json problems = nlohmann::json::array();
  for (const auto& p : e.problems())
    problems.push_back({{"line", p.line}, {"column", p.column}, {"message", p.message}});
  return ApiError(400, e.message(), {{"problems", problems}});
}

std::string percent_decode(const std::string& s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else if (s[i] == '+') {
      out += ' ';
    } else {
      out += s[i];
    }
  }
  return out;
}

namespace {

// Calls f(piece) for each non-empty piece of `s` between separators.
template <typename F>
void split(const std::string& s, char sep, F f) {
  std::size_t start = 0;
  while (start < s.size()) {
    auto end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) f(s.substr(start, end - start));
    start = end + 1;
  }
}

}  // namespace

Target parse_target(std::string_view target) {
  Target t;
  auto q = target.find('?');
  split(std::string(target.substr(0, q)), '/',
        [&](const std::string& seg) { t.segments.push_back(percent_decode(seg)); });
  if (q != std::string_view::npos) {
    split(std::string(target.substr(q + 1)), '&', [&](const std::string& kv) {
      auto eq = kv.find('=');
      t.query[percent_decode(kv.substr(0, eq))] = eq == std::string::npos ? "" : percent_decode(kv.substr(eq + 1));
    });
  }
  return t;
}

JobId parse_id(const std::string& s) {
  if (s.empty() || s.size() > 18 || s.find_first_not_of("0123456789") != std::string::npos) {
    throw ApiError(400, fmt::format("'{}' is not a job id (a positive integer, as ddp-launch list shows)", s));
  }
  return std::stoll(s);
}

JobState parse_state_param(const std::string& value) {
  auto state = parse_state(value);
  if (!state) {
    throw ApiError(400, fmt::format("state '{}' is not one of PENDING, STARTING, RUNNING, RESTARTING, "
                                    "CANCELLING, SUCCEEDED, FAILED, CANCELLED",
                                    value));
  }
  return *state;
}

void check_log_source(const std::string& rank, const std::string& stream) {
  if (rank != "supervisor" &&
      (rank.empty() || rank.size() > 6 || rank.find_first_not_of("0123456789") != std::string::npos)) {
    throw ApiError(400, fmt::format("rank '{}' is not a rank number or 'supervisor'", rank));
  }
  if (stream != "stdout" && stream != "stderr") {
    throw ApiError(400, fmt::format("stream '{}' is not stdout or stderr", stream));
  }
}

std::optional<std::pair<int, std::string>> transfer_coding_problem(const std::string& field) {
  if (field.empty()) return std::nullopt;
  std::vector<std::string> codings;
  for (const auto& t : http::token_list{boost::beast::string_view(field.data(), field.size())}) codings.emplace_back(t);
  if (codings.empty() || !boost::beast::iequals(codings.back(), "chunked")) {
    return std::pair{400, fmt::format("Transfer-Encoding '{}' does not end in chunked: the body's length is unknown "
                                      "(send the job file with Content-Length, or chunked)",
                                      field)};
  }
  if (codings.size() > 1) {
    return std::pair{501, fmt::format("Transfer-Encoding '{}': only chunked is understood; send the job file as "
                                      "plain text",
                                      field)};
  }
  return std::nullopt;
}

}  // namespace ddp::jobs
