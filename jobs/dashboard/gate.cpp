#include "jobs/dashboard/gate.hpp"

#include <fmt/format.h>

#include <vector>

#include "jobs/api_policy.hpp"
#include "jobs/api_request.hpp"

namespace ddp::jobs::dashboard {

namespace {

using Kind = Admission::Kind;

Admission reply(WebReply r) {
  Admission a;
  a.reply = std::move(r);
  return a;
}

Admission refused(int status, std::string message) {
  Admission a;
  a.kind = Kind::Refused;
  a.status = status;
  a.message = std::move(message);
  return a;
}

// The app's own pages (the browser's address bar); every one is the same page, its script draws it.
bool is_app_path(const std::vector<std::string>& s) {
  if (s.empty()) return true;
  if (s.size() == 1) return s[0] == "jobs" || s[0] == "submit" || s[0] == "host" || s[0] == "reference";
  return s.size() == 2 && s[0] == "jobs" && !s[1].empty() && s[1].size() <= 18 &&
         s[1].find_first_not_of("0123456789") == std::string::npos;
}

constexpr std::string_view kNoCredentials =
    "this TCP endpoint needs 'Authorization: Bearer <token>' (the token is in the daemon's state directory, file "
    "'token'), or a dashboard login (open the URL `ddp-launch ui` prints)";

}  // namespace

Gate::Gate(std::string token, std::uint16_t port, bool loopback_only, RandomHex random_hex, SessionLimits limits)
    : token_(std::move(token)),
      cookie_(cookie_name(port)),
      loopback_only_(loopback_only),
      random_hex_(std::move(random_hex)),
      sessions_(limits) {}

std::pair<const Session*, std::string> Gate::session_of(const WebRequest& r, TimePoint now) {
  for (auto& value : cookie_values(r.cookie, cookie_)) {
    if (const auto* s = sessions_.find(value, now)) return {s, std::move(value)};
  }
  return {nullptr, ""};
}

std::string Gate::mint_login_code(TimePoint now) {
  auto code = random_hex_(kValidatorHex);
  links_.add(code, now);
  return code;
}

WebReply Gate::open_session(std::string_view location, TimePoint now) {
  auto value = sessions_.open(random_hex_(kSelectorHex), random_hex_(kValidatorHex), random_hex_(64), now);
  return redirect(location, session_cookie(cookie_, value));
}

Admission Gate::admit(const WebRequest& r, TimePoint now) {
  if (!host_allowed(r.host, loopback_only_)) {
    return refused(403, fmt::format("Host '{}' is not this daemon's address: it listens on a loopback address and "
                                    "answers only to IP addresses and localhost (a page of another site whose name "
                                    "resolves here must not reach it); open the URL `ddp-launch ui` prints",
                                    r.host));
  }
  auto t = parse_target(r.target);
  const auto& s = t.segments;
  const bool get = r.method == "GET";
  if (s.size() == 2 && s[0] == "assets" && get) {
    const auto* a = find_asset(s[1]);
    if (!a || s[1].ends_with(".html")) return reply(not_found(r.target));
    return reply(asset_reply(*a, r.if_none_match));
  }
  if (s == std::vector<std::string>{"favicon.ico"} && get) {
    if (const auto* a = find_asset("favicon.svg")) return reply(asset_reply(*a, r.if_none_match));
  }
  if (s == std::vector<std::string>{"login"}) {
    if (r.method == "POST") return login(r, now);
    if (get) return reply(login_page(200, "", safe_next(t.query.count("next") ? t.query["next"] : "/")));
  }
  if (s == std::vector<std::string>{"logout"} && r.method == "POST") return logout(r, now);
  if (is_app_path(s) && get) return page(r, t, now);
  return guarded(r, now);
}

Admission Gate::page(const WebRequest& r, const Target& t, TimePoint now) {
  const std::string target(r.target);
  if (auto it = t.query.find("login"); it != t.query.end()) {
    if (!links_.redeem(it->second, now)) {
      return reply(login_page(401,
                              "That login link was used already or has expired: run `ddp-launch ui` again for a new "
                              "one, or paste the token.",
                              safe_next(without_token(target))));
    }
    auto a = reply(open_session(safe_next(without_token(target)), now));
    a.authenticated = true;
    return a;
  }
  if (auto it = t.query.find("token"); it != t.query.end()) {
    if (!constant_time_equal(it->second, token_)) {
      return reply(login_page(401, "That is not this daemon's token: open the URL `ddp-launch ui` prints.",
                              safe_next(without_token(target))));
    }
    auto a = reply(open_session(safe_next(without_token(target)), now));
    a.authenticated = true;
    return a;
  }
  if (auto [session, value] = session_of(r, now); session) {
    auto a = reply(app_page(session->csrf));
    a.authenticated = true;
    a.session = std::move(value);
    return a;
  }
  return reply(login_page(200, "", safe_next(target)));
}

Admission Gate::login(const WebRequest& r, TimePoint now) {
  auto form = parse_target("/?" + std::string(r.body)).query;
  auto next = safe_next(form["next"]);
  // A login form posted by another site's page would log this browser in as whoever owns that
  // token; only this origin's form counts (browsers send Origin with every POST).
  if (!r.origin.empty() && !same_origin(r.origin, r.host)) {
    return reply(login_page(403, "Cross-origin login refused.", next));
  }
  if (!constant_time_equal(form["token"], token_)) {
    return reply(login_page(401, "That is not this daemon's token: open the URL `ddp-launch ui` prints.", next));
  }
  auto a = reply(open_session(next, now));
  a.authenticated = true;
  return a;
}

Admission Gate::logout(const WebRequest& r, TimePoint now) {
  auto [session, value] = session_of(r, now);
  if (!session) return reply(redirect("/login", expired_cookie(cookie_)));
  if (auto v = check_csrf(*session, r.csrf_token, r.origin, r.host); v != CsrfVerdict::Ok) {
    return refused(403, csrf_problem(v));
  }
  sessions_.close(value);
  return reply(redirect("/login", expired_cookie(cookie_)));
}

Admission Gate::guarded(const WebRequest& r, TimePoint now) {
  Admission a;
  a.kind = Kind::Api;
  if (!r.authorization.empty()) {
    auto presented = bearer_credentials(r.authorization);
    if (!presented || !constant_time_equal(*presented, token_)) return refused(401, "invalid bearer token");
    a.authenticated = true;
    return a;
  }
  auto [session, value] = session_of(r, now);
  if (!session) return refused(401, std::string(kNoCredentials));
  if (changes_state(r.method)) {
    if (auto v = check_csrf(*session, r.csrf_token, r.origin, r.host); v != CsrfVerdict::Ok) {
      auto no = refused(403, csrf_problem(v));
      no.authenticated = true;  // who it is is known; what it asks is refused
      return no;
    }
  }
  a.authenticated = true;
  a.session = std::move(value);
  return a;
}

}  // namespace ddp::jobs::dashboard
