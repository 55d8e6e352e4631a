#include <doctest/doctest.h>

#include "jobs/dashboard/session.hpp"

using namespace ddp::jobs::dashboard;
using namespace std::chrono_literals;

namespace {
const std::string kSel(16, 'a'), kVal(48, 'b');
const TimePoint t0{};
}  // namespace

TEST_CASE("a session is found by its whole cookie value, never by a part of it") {
  SessionBook book;
  auto cookie = book.open(kSel, kVal, "csrf-1", t0);
  CHECK(cookie == kSel + kVal);
  const auto* s = book.find(cookie, t0 + 1s);
  REQUIRE(s != nullptr);
  CHECK(s->csrf == "csrf-1");
  CHECK(book.find(kSel + std::string(47, 'b') + "c", t0) == nullptr);  // right selector, wrong validator
  CHECK(book.find(kSel, t0) == nullptr);
  CHECK(book.find("", t0) == nullptr);
  CHECK(book.find(cookie + "x", t0) == nullptr);
}

TEST_CASE("an idle session ends; use keeps it alive") {
  SessionBook book(SessionLimits{8, std::chrono::minutes(10)});
  auto cookie = book.open(kSel, kVal, "c", t0);
  CHECK(book.find(cookie, t0 + 9min) != nullptr);
  CHECK(book.find(cookie, t0 + 18min) != nullptr);  // 9 min after its last use
  CHECK(book.find(cookie, t0 + 29min) == nullptr);
  CHECK(book.size() == 0);
}

TEST_CASE("the book holds at most max_sessions: the least recently used goes") {
  SessionBook book(SessionLimits{2, std::chrono::minutes(60)});
  auto a = book.open(std::string(16, '1'), kVal, "a", t0);
  auto b = book.open(std::string(16, '2'), kVal, "b", t0 + 1s);
  CHECK(book.find(a, t0 + 2s) != nullptr);  // a is now the most recently used
  auto c = book.open(std::string(16, '3'), kVal, "c", t0 + 3s);
  CHECK(book.size() == 2);
  CHECK(book.find(b, t0 + 4s) == nullptr);
  CHECK(book.find(a, t0 + 4s) != nullptr);
  CHECK(book.find(c, t0 + 4s) != nullptr);
}

TEST_CASE("logout closes only the session whose whole value is given") {
  SessionBook book;
  auto cookie = book.open(kSel, kVal, "c", t0);
  book.close(kSel + std::string(48, 'x'));
  CHECK(book.size() == 1);
  book.close(cookie);
  CHECK(book.find(cookie, t0) == nullptr);
}

TEST_CASE("cookies: per port, HttpOnly and SameSite=Strict, parsed from a Cookie header") {
  CHECK(cookie_name(8470) == "ddp_session_8470");
  auto set = session_cookie("ddp_session_8470", "v");
  CHECK(set.find("ddp_session_8470=v;") == 0);
  CHECK(set.find("HttpOnly") != std::string::npos);
  CHECK(set.find("SameSite=Strict") != std::string::npos);
  CHECK(set.find("Path=/") != std::string::npos);
  CHECK(expired_cookie("x").find("Max-Age=0") != std::string::npos);
  using V = std::vector<std::string>;
  CHECK(cookie_values("a=1; ddp_session_8470=xyz; b=2", "ddp_session_8470") == V{"xyz"});
  CHECK(cookie_values("ddp_session_8470=\"q\"", "ddp_session_8470") == V{"q"});
  CHECK(cookie_values("  a = 1 ;b=2", "a") == V{"1"});
  CHECK(cookie_values("ddp_session_8471=xyz", "ddp_session_8470").empty());
  CHECK(cookie_values("xddp_session_8470=1", "ddp_session_8470").empty());
  CHECK(cookie_values("", "a").empty());
}

TEST_CASE("every cookie of the name counts: one set by another port's page cannot shadow the session") {
  // Cookies are kept per host, not per port: a page on 127.0.0.1:9999 may set ddp_session_8470 with
  // Path=/jobs, which the browser then sends first on /jobs/….
  CHECK(cookie_values("ddp_session_8470=junk; a=1; ddp_session_8470=real", "ddp_session_8470") ==
        std::vector<std::string>{"junk", "real"});
}

TEST_CASE("DNS rebinding: a loopback daemon answers to IP addresses and localhost only") {
  for (auto host : {"127.0.0.1:8470", "127.0.0.1", "[::1]:8470", "[::1]", "localhost:8470", "LOCALHOST",
                    "localhost.:8470", "app.localhost:8470", "10.1.2.3:8470", ""}) {
    CAPTURE(host);
    CHECK(host_allowed(host, true));
  }
  for (auto host : {"evil.example:8470", "evil.example", "127.0.0.1.nip.io:8470", "localhost.evil.example",
                    "evillocalhost:8470", ":8470", "[::1", "gpu-host:8470"}) {
    CAPTURE(host);
    CHECK_FALSE(host_allowed(host, true));
    CHECK(host_allowed(host, false));  // a daemon on another address is reached by its names
  }
}

TEST_CASE("a login link opens once, within its time") {
  LoginLinks links(3, std::chrono::minutes(10));
  const std::string a(48, 'a'), b(48, 'b');
  links.add(a, t0);
  links.add(b, t0);
  CHECK_FALSE(links.redeem(std::string(48, 'c'), t0));
  CHECK_FALSE(links.redeem("", t0));
  CHECK_FALSE(links.redeem(a.substr(1), t0));
  CHECK(links.redeem(a, t0 + 1min));
  CHECK_FALSE(links.redeem(a, t0 + 1min));   // used
  CHECK_FALSE(links.redeem(b, t0 + 10min));  // expired
  for (char c : std::string("defg")) links.add(std::string(48, c), t0);
  CHECK_FALSE(links.redeem(std::string(48, 'd'), t0));  // the oldest of more than 3 is dropped
  CHECK(links.redeem(std::string(48, 'g'), t0));
}

TEST_CASE("CSRF: a session's state-changing request needs its token and this origin") {
  Session s{kVal, "the-token", t0};
  CHECK(changes_state("POST"));
  CHECK(changes_state("DELETE"));
  CHECK_FALSE(changes_state("GET"));
  CHECK(check_csrf(s, "the-token", "", "127.0.0.1:8470") == CsrfVerdict::Ok);
  CHECK(check_csrf(s, "the-token", "http://127.0.0.1:8470", "127.0.0.1:8470") == CsrfVerdict::Ok);
  CHECK(check_csrf(s, "", "http://127.0.0.1:8470", "127.0.0.1:8470") == CsrfVerdict::MissingToken);
  CHECK(check_csrf(s, "the-tokeN", "", "127.0.0.1:8470") == CsrfVerdict::WrongToken);
  CHECK(check_csrf(s, "the-token", "http://evil.example", "127.0.0.1:8470") == CsrfVerdict::CrossOrigin);
  CHECK(check_csrf(s, "the-token", "null", "127.0.0.1:8470") == CsrfVerdict::CrossOrigin);
  CHECK(check_csrf(s, "the-token", "http://127.0.0.1:8471", "127.0.0.1:8470") == CsrfVerdict::CrossOrigin);
  CHECK(check_csrf(s, "the-token", "ftp://127.0.0.1:8470", "127.0.0.1:8470") == CsrfVerdict::CrossOrigin);
  CHECK(same_origin("HTTP://Host:1", "host:1"));
  CHECK_FALSE(same_origin("http://host:1", ""));
  CHECK(csrf_problem(CsrfVerdict::MissingToken).find("X-CSRF-Token") != std::string::npos);
}

TEST_CASE("the token leaves the address: without_token keeps the path and the other parameters") {
  CHECK(without_token("/?token=abc") == "/");
  CHECK(without_token("/jobs/3?token=abc&state=RUNNING") == "/jobs/3?state=RUNNING");
  CHECK(without_token("/jobs?state=RUNNING&token=abc") == "/jobs?state=RUNNING");
  CHECK(without_token("/jobs?%74oken=abc") == "/jobs");  // percent-encoded name
  CHECK(without_token("/jobs") == "/jobs");
  CHECK(without_token("/?tokens=1") == "/?tokens=1");
  CHECK(without_token("/jobs/3?login=abc&x=1") == "/jobs/3?x=1");
}

TEST_CASE("a login redirects only to a path of this server") {
  CHECK(safe_next("/jobs/3?state=x") == "/jobs/3?state=x");
  CHECK(safe_next("//evil.example/") == "/");
  CHECK(safe_next("/\\evil.example") == "/");
  CHECK(safe_next("http://evil.example/") == "/");
  CHECK(safe_next("") == "/");
  CHECK(safe_next("/a\r\nSet-Cookie: x") == "/");
}

TEST_CASE("the dashboard's URL for a listening address") {
  CHECK(dashboard_url("127.0.0.1", 8470, "c0de") == "http://127.0.0.1:8470/?login=c0de");
  CHECK(dashboard_url("0.0.0.0", 80, "c") == "http://127.0.0.1:80/?login=c");
  CHECK(dashboard_url("::", 8470, "c") == "http://[::1]:8470/?login=c");
  CHECK(dashboard_url("fe80::1", 8470, "c") == "http://[fe80::1]:8470/?login=c");
  CHECK(dashboard_url("gpu-node-3", 8470, "c") == "http://gpu-node-3:8470/?login=c");
}
