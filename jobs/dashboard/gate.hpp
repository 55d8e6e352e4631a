#pragma once
// Gate: who may do what on the daemon's TCP address, pure (the time and the random draws are
// inputs). Every TCP request passes it before the JSON API sees it:
//
//   any request whose Host names neither an IP address nor localhost, when the daemon listens on
//                                          a loopback address: 403 (DNS rebinding, host_allowed)
//   /assets/…, /login, /favicon.ico        anyone (no data in them)
//   /, /jobs, /jobs/N, /submit, /host      ?login=<a one-time code `ddp-launch ui` got> or ?token=<the
//                                          daemon's token>: a new session, its cookie, and a 303 to the
//                                          same page without it; a session: the app; else the login page
//   /v1/…, /metrics, /ui/events            `Authorization: Bearer <token>` (the CLI, scripts) or a
//                                          session cookie; with the cookie, a state-changing request
//                                          also needs the session's X-CSRF-Token and this origin
//   POST /logout                           a session (and its CSRF token): forgets it
//
// The unix socket (mode 0600: its owner) has no gate.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include "jobs/api_request.hpp"
#include "jobs/dashboard/pages.hpp"
#include "jobs/dashboard/session.hpp"

namespace ddp::jobs::dashboard {

// The parts of an HTTP request the gate looks at ("" for a header that is absent).
struct WebRequest {
  std::string_view method, target;
  std::string_view host, cookie, authorization, csrf_token, origin, if_none_match;
  std::string_view body;  // POST /login: application/x-www-form-urlencoded token=…&next=…
};

struct Admission {
  enum class Kind {
    Reply,    // answer `reply`, a dashboard page or file
    Api,      // the API serves it (/v1/…, /metrics, the live stream /ui/events): it proved who it is
    Refused,  // answer the API's JSON error `status` + `message` (401 closes the connection)
  };
  Kind kind = Kind::Reply;
  WebReply reply;
  int status = 0;
  std::string message;
  bool authenticated = false;  // a valid bearer token or session: the connection's auth deadline ends
  std::string session;         // the session cookie's value that authenticated it ("" for a bearer token)
};

class Gate {
 public:
  // `random_hex(n)`: n hex digits from a cryptographic source (the shell's getrandom).
  using RandomHex = std::function<std::string(std::size_t)>;
  // `loopback_only`: the daemon listens on a loopback address (see host_allowed).
  Gate(std::string token, std::uint16_t port, bool loopback_only, RandomHex random_hex, SessionLimits limits = {});

  Admission admit(const WebRequest& request, TimePoint now);
  // A one-time login code for `/?login=CODE` (what `ddp-launch ui` prints), valid login_link_ttl().
  std::string mint_login_code(TimePoint now);
  std::chrono::minutes login_link_ttl() const { return links_.ttl(); }
  // Whether the session with this cookie value is still open (not logged out, expired or
  // evicted): a live stream asks before each message, so a logout ends the streams it opened.
  bool session_open(std::string_view cookie_value, TimePoint now) {
    return sessions_.find(cookie_value, now) != nullptr;
  }
  std::size_t sessions() const { return sessions_.size(); }

 private:
  Admission page(const WebRequest& r, const Target& t, TimePoint now);  // t: r.target parsed
  Admission login(const WebRequest& r, TimePoint now);
  Admission logout(const WebRequest& r, TimePoint now);
  Admission guarded(const WebRequest& r, TimePoint now);
  WebReply open_session(std::string_view location, TimePoint now);
  // The session one of the request's cookies of this daemon's name opens, and that cookie's value.
  std::pair<const Session*, std::string> session_of(const WebRequest& r, TimePoint now);
  std::string token_;
  std::string cookie_;
  bool loopback_only_;
  RandomHex random_hex_;
  SessionBook sessions_;
  LoginLinks links_;
};

}  // namespace ddp::jobs::dashboard
