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
#include <vector>

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
// Every value of cookie `name` in a Cookie header ("a=1; b=2"), in the header's order. A browser
// sends one per (path, domain) it holds: a page on another port of this host may set a second
// `ddp_session_8470` (cookies are not kept per port) with a longer Path, which then comes first;
// the gate tries each, so such a cookie cannot log the browser out.
std::vector<std::string> cookie_values(std::string_view cookie_header, std::string_view name);
// Set-Cookie for a session: HttpOnly (no script reads it), SameSite=Strict (no other site's page
// sends it), Path=/, no Max-Age (it ends with the browser session; the daemon's idle limit too).
std::string session_cookie(std::string_view name, std::string_view value);
std::string expired_cookie(std::string_view name);  // logs the browser out

// POST, PUT, PATCH, DELETE: what a browser session may only send with its CSRF token.
bool changes_state(std::string_view method);

// An Origin header ("http://127.0.0.1:8470") names the daemon a Host header ("127.0.0.1:8470") names.
bool same_origin(std::string_view origin, std::string_view host);

// DNS rebinding: a page of evil.example whose name then resolves to 127.0.0.1 is, to the browser,
// the same origin as the daemon's address. A daemon that listens on a loopback address can only be
// reached from this host, so a Host header naming anything but an IP address or localhost
// (`localhost`, `*.localhost`) is such a page, and is refused. A daemon on another address is
// reached by its names (no such check); an absent Host (HTTP/1.0, never a browser) passes.
bool host_allowed(std::string_view host, bool loopback_only);

enum class CsrfVerdict { Ok, MissingToken, WrongToken, CrossOrigin };
// A state-changing request that a session cookie authenticates must carry the session's token in
// X-CSRF-Token (a page of another site cannot read it), and when the browser names its Origin, that
// origin must be this daemon's (`http://` + the Host header). Requests with a bearer token need
// neither: a browser never adds that header by itself.
CsrfVerdict check_csrf(const Session& session, std::string_view header_token, std::string_view origin,
                       std::string_view host);
std::string csrf_problem(CsrfVerdict verdict);  // the 403's message

// One-time login links (`ddp-launch ui`): a code that opens one session, once, within `ttl`. The
// long-lived token in a URL stays in the browser's history (a redirect does not take it out) and
// on the argv of the browser `ui --open` starts; a used or expired code is worth nothing there.
// At most `max_codes` wait at once (the oldest is dropped); each is compared in constant time.
class LoginLinks {
 public:
  explicit LoginLinks(std::size_t max_codes = 16, std::chrono::minutes ttl = std::chrono::minutes(10))
      : max_codes_(max_codes), ttl_(ttl) {}
  void add(std::string code, TimePoint now);
  // True once for a code that was added and has not expired; the code is gone afterwards.
  bool redeem(std::string_view code, TimePoint now);
  std::chrono::minutes ttl() const { return ttl_; }

 private:
  struct Code {
    std::string code;
    TimePoint expires;
  };
  std::size_t max_codes_;
  std::chrono::minutes ttl_;
  std::vector<Code> codes_;  // oldest first
};

// The request target without its `token` and `login` query parameters: where a login by URL
// redirects to, so the secret leaves the address bar ("/jobs/3?token=x&a=1" → "/jobs/3?a=1"). The
// browser's history keeps the URL it was given all the same (hence LoginLinks).
std::string without_token(std::string_view target);
// A `next` target a login may redirect to: a path on this server ("/…", never "//host"), else "/".
std::string safe_next(std::string_view next);

// The dashboard's login URL with a one-time code (LoginLinks) for a daemon listening on
// `host`:`port`: a wildcard address (0.0.0.0, ::) becomes the loopback one, an IPv6 address gets
// its brackets.
std::string dashboard_url(std::string_view host, std::uint16_t port, std::string_view login_code);

}  // namespace ddp::jobs::dashboard
