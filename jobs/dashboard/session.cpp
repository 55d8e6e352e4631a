#include "jobs/dashboard/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "jobs/api_policy.hpp"
#include "jobs/api_request.hpp"

namespace ddp::jobs::dashboard {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

std::string SessionBook::open(const std::string& selector, const std::string& validator, std::string csrf,
                              TimePoint now) {
  forget_expired(now);
  while (sessions_.size() >= limits_.max_sessions && !sessions_.empty()) {
    auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](const auto& a, const auto& b) {
      return a.second.last_used < b.second.last_used;
    });
    sessions_.erase(oldest);
  }
  sessions_[selector] = Session{validator, std::move(csrf), now};
  return selector + validator;
}

const Session* SessionBook::find(std::string_view cookie_value, TimePoint now) {
  if (cookie_value.size() != kSelectorHex + kValidatorHex) return nullptr;
  auto it = sessions_.find(cookie_value.substr(0, kSelectorHex));
  if (it == sessions_.end()) return nullptr;
  if (!constant_time_equal(std::string(cookie_value.substr(kSelectorHex)), it->second.validator)) return nullptr;
  if (now - it->second.last_used > limits_.idle) {
    sessions_.erase(it);
    return nullptr;
  }
  it->second.last_used = now;
  return &it->second;
}

void SessionBook::close(std::string_view cookie_value) {
  if (cookie_value.size() != kSelectorHex + kValidatorHex) return;
  auto it = sessions_.find(cookie_value.substr(0, kSelectorHex));
  if (it != sessions_.end() &&
      constant_time_equal(std::string(cookie_value.substr(kSelectorHex)), it->second.validator)) {
    sessions_.erase(it);
  }
}

void SessionBook::forget_expired(TimePoint now) {
  std::erase_if(sessions_, [&](const auto& kv) { return now - kv.second.last_used > limits_.idle; });
}

std::string cookie_name(std::uint16_t port) { return fmt::format("ddp_session_{}", port); }

std::optional<std::string> cookie_value(std::string_view header, std::string_view name) {
  while (!header.empty()) {
    auto end = header.find(';');
    auto pair = trim(header.substr(0, end));
    header = end == std::string_view::npos ? std::string_view() : header.substr(end + 1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos || trim(pair.substr(0, eq)) != name) continue;
    auto value = trim(pair.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    return std::string(value);
  }
  return std::nullopt;
}

std::string session_cookie(std::string_view name, std::string_view value) {
  return fmt::format("{}={}; Path=/; HttpOnly; SameSite=Strict", name, value);
}

std::string expired_cookie(std::string_view name) {
  return fmt::format("{}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0", name);
}

bool changes_state(std::string_view method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE";
}

bool same_origin(std::string_view origin, std::string_view host) {
  auto scheme = origin.find("://");
  if (scheme == std::string_view::npos || host.empty()) return false;  // "null": a sandboxed or file page
  auto s = origin.substr(0, scheme);
  return (iequals(s, "http") || iequals(s, "https")) && iequals(origin.substr(scheme + 3), host);
}

CsrfVerdict check_csrf(const Session& session, std::string_view header_token, std::string_view origin,
                       std::string_view host) {
  if (!origin.empty() && !same_origin(origin, host)) return CsrfVerdict::CrossOrigin;
  if (header_token.empty()) return CsrfVerdict::MissingToken;
  if (!constant_time_equal(std::string(header_token), session.csrf)) return CsrfVerdict::WrongToken;
  return CsrfVerdict::Ok;
}

std::string csrf_problem(CsrfVerdict verdict) {
  switch (verdict) {
    case CsrfVerdict::Ok: return "";
    case CsrfVerdict::MissingToken:
      return "a request that changes a job needs the page's X-CSRF-Token header (reload the dashboard), or "
             "'Authorization: Bearer <token>'";
    case CsrfVerdict::WrongToken: return "the X-CSRF-Token header is not this session's (reload the dashboard)";
    case CsrfVerdict::CrossOrigin:
      return "cross-origin request refused: only the dashboard's own pages may change jobs";
  }
  return "";
}

std::string without_token(std::string_view target) {
  auto q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, q));
  std::string query;
  auto rest = target.substr(q + 1);
  while (!rest.empty()) {
    auto end = rest.find('&');
    auto kv = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    if (kv.empty() || percent_decode(std::string(kv.substr(0, kv.find('=')))) == "token") continue;
    query += (query.empty() ? "" : "&") + std::string(kv);
  }
  if (!query.empty()) out += "?" + query;
  return out.empty() ? "/" : out;
}

std::string safe_next(std::string_view next) {
  if (next.empty() || next.front() != '/' || (next.size() > 1 && (next[1] == '/' || next[1] == '\\'))) return "/";
  for (char c : next) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "/";  // no header splitting
  }
  return std::string(next);
}

std::string dashboard_url(std::string_view host, std::uint16_t port, std::string_view token) {
  std::string h(host);
  if (h == "0.0.0.0" || h.empty()) h = "127.0.0.1";
  if (h == "::" || h == "[::]") h = "::1";
  if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";
  return fmt::format("http://{}:{}/?token={}", h, port, token);
}

}  // namespace ddp::jobs::dashboard
