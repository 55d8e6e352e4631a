#pragma once
// Gate: who may do what on the daemon's TCP address, pure (the time and the random draws are
// inputs). Every TCP request passes it before the JSON API sees it:
//
//   /assets/…, /login, /favicon.ico        anyone (no data in them)
//   /, /jobs, /jobs/N, /submit, /host      ?token=<the daemon's token>: a new session, its cookie, and a
//                                          303 to the same page without the token; a session: the app;
//                                          else the login page
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
};

class Gate {
 public:
  // `random_hex(n)`: n hex digits from a cryptographic source (the shell's getrandom).
  using RandomHex = std::function<std::string(std::size_t)>;
  Gate(std::string token, std::uint16_t port, RandomHex random_hex, SessionLimits limits = {});

  Admission admit(const WebRequest& request, TimePoint now);
  std::size_t sessions() const { return sessions_.size(); }
  const std::string& cookie() const { return cookie_; }  // the session cookie's name

 private:
  Admission page(const WebRequest& r, TimePoint now);
  Admission login(const WebRequest& r, TimePoint now);
  Admission logout(const WebRequest& r, TimePoint now);
  Admission guarded(const WebRequest& r, TimePoint now);
  WebReply open_session(std::string_view location, TimePoint now);
  const Session* session_of(const WebRequest& r, TimePoint now);
  std::string token_;
  std::string cookie_;
  RandomHex random_hex_;
  SessionBook sessions_;
};

}  // namespace ddp::jobs::dashboard
