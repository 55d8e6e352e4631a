#pragma once
// The dashboard's logins, pure (no sockets, no clock, no randomness of its own): the browser
// sessions a token URL opens, their cookie, and the CSRF rule for the requests that change state.
//
// A session's cookie value is a selector (16 hex digits, the map key) and a validator (48 hex
// digits, compared in constant time): looking a session up does not leak, through its timing, how
// much of a guessed value was right. Sessions live in memory only: a restarted daemon forgets
// them (the browser logs in again with the URL `ddp-launch ui` prints); at most `max_sessions`,
// the least recently used one is forgotten beyond that, so logins cannot grow the daemon.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::jobs::dashboard {

using TimePoint = std::chrono::steady_clock::time_point;

struct Session {
  std::string validator;  // the cookie value's secret part
  std::string csrf;       // what the page sends back as X-CSRF-Token on a state-changing request
  TimePoint last_used;
};

struct SessionLimits {
  std::size_t max_sessions = 64;
  std::chrono::minutes idle{7 * 24 * 60};  // a session unused this long is over
};

inline constexpr std::size_t kSelectorHex = 16, kValidatorHex = 48;

class SessionBook {
 public:
  explicit SessionBook(SessionLimits limits = {}) : limits_(limits) {}
  // Opens a session from three random hex strings the caller drew (selector: kSelectorHex digits,
  // validator: kValidatorHex, csrf: any length); returns the cookie value.
  std::string open(const std::string& selector, const std::string& validator, std::string csrf, TimePoint now);
  // The live session whose cookie value this is (and marks it used), or nullptr.
  const Session* find(std::string_view cookie_value, TimePoint now);
  void close(std::string_view cookie_value);
  std::size_t size() const { return sessions_.size(); }

 private:
  void forget_expired(TimePoint now);
  SessionLimits limits_;
  std::map<std::string, Session, std::less<>> sessions_;  // selector → session
};

// The cookie's name carries the port: browsers keep cookies per host, not per port, so two
// daemons on one host (8470 and 8471) must not overwrite each other's login (Jupyter does the same).
std::string cookie_name(std::uint16_t port);
// The value of cookie `name` in a Cookie header ("a=1; b=2"), or nullopt.
std::optional<std::string> cookie_value(std::string_view cookie_header, std::string_view name);
// Set-Cookie for a session: HttpOnly (no script reads it), SameSite=Strict (no other site's page
// sends it), Path=/, no Max-Age (it ends with the browser session; the daemon's idle limit too).
std::string session_cookie(std::string_view name, std::string_view value);
std::string expired_cookie(std::string_view name);  // logs the browser out

// POST, PUT, PATCH, DELETE: what a browser session may only send with its CSRF token.
bool changes_state(std::string_view method);

// An Origin header ("http://127.0.0.1:8470") names the daemon a Host header ("127.0.0.1:8470") names.
bool same_origin(std::string_view origin, std::string_view host);

enum class CsrfVerdict { Ok, MissingToken, WrongToken, CrossOrigin };
// A state-changing request that a session cookie authenticates must carry the session's token in
// X-CSRF-Token (a page of another site cannot read it), and when the browser names its Origin, that
// origin must be this daemon's (`http://` + the Host header). Requests with a bearer token need
// neither: a browser never adds that header by itself.
CsrfVerdict check_csrf(const Session& session, std::string_view header_token, std::string_view origin,
                       std::string_view host);
std::string csrf_problem(CsrfVerdict verdict);  // the 403's message

// The request target without its `token` query parameter: where a token login redirects to, so
// the token leaves the address bar and the history ("/jobs/3?token=x&a=1" → "/jobs/3?a=1").
std::string without_token(std::string_view target);
// A `next` target a login may redirect to: a path on this server ("/…", never "//host"), else "/".
std::string safe_next(std::string_view next);

// The dashboard's URL with its token for a daemon listening on `host`:`port`: a wildcard address
// (0.0.0.0, ::) becomes the loopback one, an IPv6 address gets its brackets.
std::string dashboard_url(std::string_view host, std::uint16_t port, std::string_view token);

}  // namespace ddp::jobs::dashboard
