#include "jobs/dashboard/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "jobs/api_policy.hpp"
#include "jobs/api_request.hpp"
#include "jobs/dashboard/pages.hpp"

namespace ddp::jobs::dashboard {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
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

std::vector<std::string> cookie_values(std::string_view header, std::string_view name) {
  std::vector<std::string> out;
  while (!header.empty()) {
    auto end = header.find(';');
    auto pair = trim(header.substr(0, end));
    header = end == std::string_view::npos ? std::string_view() : header.substr(end + 1);
    auto eq = pair.find('=');
    if (eq == std::string_view::npos || trim(pair.substr(0, eq)) != name) continue;
    auto value = trim(pair.substr(eq + 1));
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"') value = value.substr(1, value.size() - 2);
    out.emplace_back(value);
  }
  return out;
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

bool host_allowed(std::string_view host, bool loopback_only) {
  if (!loopback_only || host.empty()) return true;
  if (host.front() == '[') return host.find(']') != std::string_view::npos;  // an IPv6 address
  auto name = host.substr(0, host.rfind(':'));
  if (!name.empty() && name.find_first_not_of("0123456789.") == std::string_view::npos) return true;  // IPv4
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!lower.empty() && lower.back() == '.') lower.pop_back();  // "localhost." is localhost too
  return lower == "localhost" || lower.ends_with(".localhost");
}

void LoginLinks::add(std::string code, TimePoint now) {
  std::erase_if(codes_, [&](const Code& c) { return c.expires <= now; });
  while (codes_.size() >= max_codes_ && !codes_.empty()) codes_.erase(codes_.begin());
  codes_.push_back({std::move(code), now + ttl_});
}

bool LoginLinks::redeem(std::string_view code, TimePoint now) {
  std::erase_if(codes_, [&](const Code& c) { return c.expires <= now; });
  const std::string presented(code);
  auto hit = codes_.end();
  for (auto it = codes_.begin(); it != codes_.end(); ++it) {  // every one compared: no early exit
    if (constant_time_equal(presented, it->code)) hit = it;
  }
  if (hit == codes_.end()) return false;
  codes_.erase(hit);
  return true;
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
    if (kv.empty()) continue;
    if (auto key = percent_decode(std::string(kv.substr(0, kv.find('=')))); key == "token" || key == "login") continue;
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

std::string dashboard_url(std::string_view host, std::uint16_t port, std::string_view login_code) {
  std::string h(host);
  if (h == "0.0.0.0" || h.empty()) h = "127.0.0.1";
  if (h == "::" || h == "[::]") h = "::1";
  if (h.find(':') != std::string::npos && h.front() != '[') h = "[" + h + "]";
  return fmt::format("http://{}:{}/?login={}", h, port, login_code);
}

}  // namespace ddp::jobs::dashboard
