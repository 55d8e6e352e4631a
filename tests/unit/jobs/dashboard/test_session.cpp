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
  CHECK(*cookie_value("a=1; ddp_session_8470=xyz; b=2", "ddp_session_8470") == "xyz");
  CHECK(*cookie_value("ddp_session_8470=\"q\"", "ddp_session_8470") == "q");
  CHECK(*cookie_value("  a = 1 ;b=2", "a") == "1");
  CHECK_FALSE(cookie_value("ddp_session_8471=xyz", "ddp_session_8470"));
  CHECK_FALSE(cookie_value("xddp_session_8470=1", "ddp_session_8470"));
  CHECK_FALSE(cookie_value("", "a"));
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
  CHECK(dashboard_url("127.0.0.1", 8470, "t0k") == "http://127.0.0.1:8470/?token=t0k");
  CHECK(dashboard_url("0.0.0.0", 80, "t") == "http://127.0.0.1:80/?token=t");
  CHECK(dashboard_url("::", 8470, "t") == "http://[::1]:8470/?token=t");
  CHECK(dashboard_url("fe80::1", 8470, "t") == "http://[fe80::1]:8470/?token=t");
  CHECK(dashboard_url("gpu-node-3", 8470, "t") == "http://gpu-node-3:8470/?token=t");
}
