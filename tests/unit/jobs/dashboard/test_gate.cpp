#include <doctest/doctest.h>
#include <fmt/format.h>

#include "jobs/dashboard/gate.hpp"

using namespace ddp::jobs::dashboard;
using namespace std::chrono_literals;
using Kind = Admission::Kind;

namespace {

const std::string kToken(64, '7');
const TimePoint t0{std::chrono::hours(1)};

// Deterministic "random" hex: 0000…1, 0000…2, … (the shell draws from getrandom).
Gate make_gate(bool loopback_only = true) {
  auto n = std::make_shared<int>(0);
  return Gate(kToken, 8470, loopback_only, [n](std::size_t digits) {
    auto s = fmt::format("{:0{}x}", ++*n, digits);
    return s.substr(s.size() - digits);
  });
}

WebRequest get(std::string_view target, std::string_view cookie = "") {
  WebRequest r;
  r.method = "GET";
  r.target = target;
  r.host = "127.0.0.1:8470";
  r.cookie = cookie;
  return r;
}

// Logs in by the token URL; returns the Cookie header a browser would send next.
std::string login(Gate& gate) {
  auto a = gate.admit(get("/?token=" + kToken), t0);
  REQUIRE(a.kind == Kind::Reply);
  auto set = a.reply.header("Set-Cookie");
  return set.substr(0, set.find(';'));
}

std::string csrf_of(Gate& gate, const std::string& cookie) {
  auto a = gate.admit(get("/", cookie), t0);
  auto& body = a.reply.body;
  auto at = body.find("name=\"csrf-token\" content=\"");
  REQUIRE(at != std::string::npos);
  at += 27;
  return body.substr(at, body.find('"', at) - at);
}

}  // namespace

TEST_CASE("without the token: the login page, never data") {
  auto gate = make_gate();
  auto a = gate.admit(get("/"), t0);
  CHECK(a.kind == Kind::Reply);
  CHECK(a.reply.status == 200);
  CHECK_FALSE(a.authenticated);
  CHECK(a.reply.body.find("<form method=\"post\" action=\"/login\">") != std::string::npos);
  CHECK(a.reply.body.find("csrf-token") == std::string::npos);
  CHECK(a.reply.header("Content-Type") == "text/html; charset=utf-8");
  CHECK(a.reply.header("Content-Security-Policy").find("default-src 'none'") != std::string::npos);
  CHECK(a.reply.header("Cache-Control") == "no-store");
  for (auto target : {"/v1/jobs", "/v1/jobs/1", "/ui/events", "/metrics", "/v1/host"}) {
    auto no = gate.admit(get(target), t0);
    CHECK(no.kind == Kind::Refused);
    CHECK(no.status == 401);
    CHECK(no.message.find("Bearer") != std::string::npos);
  }
}

TEST_CASE("a wrong token in the URL: the login page says so, 401") {
  auto gate = make_gate();
  auto a = gate.admit(get("/?token=nope"), t0);
  CHECK(a.kind == Kind::Reply);
  CHECK(a.reply.status == 401);
  CHECK(a.reply.body.find("not this daemon&#39;s token") != std::string::npos);  // escaped
  CHECK(a.reply.header("Set-Cookie").empty());
  CHECK(gate.sessions() == 0);
}

TEST_CASE("the token URL: a session cookie and a redirect without the token") {
  auto gate = make_gate();
  auto a = gate.admit(get("/jobs/3?token=" + kToken + "&x=1"), t0);
  CHECK(a.kind == Kind::Reply);
  CHECK(a.reply.status == 303);
  CHECK(a.reply.header("Location") == "/jobs/3?x=1");
  auto set = a.reply.header("Set-Cookie");
  CHECK(set.find("ddp_session_8470=") == 0);
  CHECK(set.find("HttpOnly") != std::string::npos);
  CHECK(set.find("SameSite=Strict") != std::string::npos);
  CHECK(a.authenticated);
  CHECK(gate.sessions() == 1);
  auto cookie = set.substr(0, set.find(';'));
  auto page = gate.admit(get("/jobs/3?x=1", "other=1; " + cookie), t0 + 1s);
  CHECK(page.reply.status == 200);
  CHECK(page.reply.body.find("<meta name=\"csrf-token\" content=\"") != std::string::npos);
  CHECK(page.reply.body.find("{{csrf}}") == std::string::npos);
  // Another port's cookie name is not this daemon's.
  auto other = gate.admit(get("/", "ddp_session_8471=" + cookie.substr(cookie.find('=') + 1)), t0);
  CHECK(other.reply.body.find("csrf-token") == std::string::npos);
}

TEST_CASE("the API: bearer token or session; CSRF for a session's state changes") {
  auto gate = make_gate();
  auto cookie = login(gate);
  auto csrf = csrf_of(gate, cookie);
  CHECK(csrf.size() == 64);

  auto a = gate.admit(get("/v1/jobs", cookie), t0);
  CHECK(a.kind == Kind::Api);
  CHECK(a.authenticated);
  CHECK(gate.admit(get("/ui/events?view=jobs", cookie), t0).kind == Kind::Api);

  WebRequest post = get("/v1/jobs/1/cancel", cookie);
  post.method = "POST";
  auto no = gate.admit(post, t0);
  CHECK(no.kind == Kind::Refused);
  CHECK(no.status == 403);
  CHECK(no.message.find("X-CSRF-Token") != std::string::npos);
  post.csrf_token = "0000";
  CHECK(gate.admit(post, t0).status == 403);
  post.csrf_token = csrf;
  CHECK(gate.admit(post, t0).kind == Kind::Api);
  post.origin = "http://127.0.0.1:8470";
  CHECK(gate.admit(post, t0).kind == Kind::Api);
  post.origin = "http://evil.example";
  auto cross = gate.admit(post, t0);
  CHECK(cross.status == 403);
  CHECK(cross.message.find("cross-origin") != std::string::npos);

  WebRequest bearer = get("/v1/jobs/1/cancel");
  bearer.method = "POST";
  std::string header = "Bearer " + kToken;
  bearer.authorization = header;
  CHECK(gate.admit(bearer, t0).kind == Kind::Api);  // the CLI's way: no CSRF token needed
  bearer.authorization = "Bearer nope";
  auto bad = gate.admit(bearer, t0);
  CHECK(bad.status == 401);
  CHECK(bad.message == "invalid bearer token");
  bearer.authorization = "Basic eDp5";
  CHECK(gate.admit(bearer, t0).status == 401);
}

TEST_CASE("the login form: the token posted, from this origin only") {
  auto gate = make_gate();
  WebRequest r = get("/login");
  CHECK(gate.admit(r, t0).reply.status == 200);
  r.method = "POST";
  std::string body = "token=" + kToken + "&next=%2Fjobs%2F4";
  r.body = body;
  r.origin = "http://127.0.0.1:8470";
  auto ok = gate.admit(r, t0);
  CHECK(ok.reply.status == 303);
  CHECK(ok.reply.header("Location") == "/jobs/4");
  CHECK_FALSE(ok.reply.header("Set-Cookie").empty());
  std::string evil = "token=" + kToken + "&next=//evil.example";
  r.body = evil;
  CHECK(gate.admit(r, t0).reply.header("Location") == "/");
  r.origin = "http://evil.example";
  CHECK(gate.admit(r, t0).reply.status == 403);
  r.origin = "";
  std::string wrong = "token=x";
  r.body = wrong;
  auto no = gate.admit(r, t0);
  CHECK(no.reply.status == 401);
  CHECK(no.reply.header("Set-Cookie").empty());
}

TEST_CASE("logout forgets the session (with its CSRF token)") {
  auto gate = make_gate();
  auto cookie = login(gate);
  auto csrf = csrf_of(gate, cookie);
  WebRequest r = get("/logout", cookie);
  r.method = "POST";
  CHECK(gate.admit(r, t0).status == 403);  // without the token a page of another site could log us out
  r.csrf_token = csrf;
  auto a = gate.admit(r, t0);
  CHECK(a.reply.status == 303);
  CHECK(a.reply.header("Set-Cookie").find("Max-Age=0") != std::string::npos);
  CHECK(gate.sessions() == 0);
  CHECK(gate.admit(get("/v1/jobs", cookie), t0).status == 401);
}

TEST_CASE("files: anyone, with their type, ETag and revalidation; pages are not files") {
  auto gate = make_gate();
  auto js = gate.admit(get("/assets/app.js"), t0);
  CHECK(js.reply.status == 200);
  CHECK(js.reply.header("Content-Type") == "text/javascript; charset=utf-8");
  CHECK(js.reply.header("Cache-Control") == "no-cache");
  CHECK(js.reply.header("X-Content-Type-Options") == "nosniff");
  auto etag = js.reply.header("ETag");
  CHECK(etag.size() == 34);
  WebRequest again = get("/assets/app.js");
  again.if_none_match = etag;
  auto not_modified = gate.admit(again, t0);
  CHECK(not_modified.reply.status == 304);
  CHECK(not_modified.reply.body.empty());
  CHECK(gate.admit(get("/assets/uPlot.iife.min.js"), t0).reply.body.find("uPlot") != std::string::npos);
  CHECK(gate.admit(get("/assets/uPlot.min.css"), t0).reply.header("Content-Type") == "text/css; charset=utf-8");
  CHECK(gate.admit(get("/assets/index.html"), t0).reply.status == 404);
  CHECK(gate.admit(get("/assets/nope.js"), t0).reply.status == 404);
  CHECK(gate.admit(get("/favicon.ico"), t0).reply.header("Content-Type") == "image/svg+xml");
}

TEST_CASE("a cookie of the same name set by another port's page does not hide the session") {
  auto gate = make_gate();
  auto cookie = login(gate);
  auto name = cookie.substr(0, cookie.find('=') + 1);
  auto junk = name + "junk; " + name + std::string(64, '0') + "; " + cookie;
  auto page = gate.admit(get("/jobs/1", junk), t0);
  CHECK(page.reply.body.find("csrf-token") != std::string::npos);
  CHECK(page.session == cookie.substr(name.size()));
  auto csrf = csrf_of(gate, cookie);
  WebRequest out = get("/logout", junk);
  out.method = "POST";
  out.csrf_token = csrf;
  CHECK(gate.admit(out, t0).reply.status == 303);
  CHECK(gate.sessions() == 0);  // the real one was closed
}

TEST_CASE("DNS rebinding: a loopback daemon refuses a Host that names another site") {
  auto gate = make_gate(true);
  auto cookie = login(gate);
  for (auto target : {"/", "/login", "/assets/app.js", "/v1/jobs", "/ui/events?view=jobs"}) {
    CAPTURE(target);
    WebRequest r = get(target, cookie);
    r.host = "evil.example:8470";
    auto a = gate.admit(r, t0);
    CHECK(a.kind == Kind::Refused);
    CHECK(a.status == 403);
    CHECK(a.message.find("evil.example:8470") != std::string::npos);
    r.host = "localhost:8470";
    CHECK(gate.admit(r, t0).kind != Kind::Refused);
  }
  auto open = make_gate(false);  // --listen 0.0.0.0: reached by the host's names
  WebRequest r = get("/login");
  r.host = "gpu-host:8470";
  CHECK(open.admit(r, t0).reply.status == 200);
}

TEST_CASE("a login link logs in once; the session it opens is open until logout") {
  auto gate = make_gate();
  auto code = gate.mint_login_code(t0);
  CHECK(code.size() == 48);
  auto a = gate.admit(get("/jobs/2?login=" + code), t0);
  CHECK(a.reply.status == 303);
  CHECK(a.reply.header("Location") == "/jobs/2");
  CHECK(a.authenticated);
  auto set = a.reply.header("Set-Cookie");
  auto value = set.substr(set.find('=') + 1, 64);
  CHECK(gate.session_open(value, t0));
  auto again = gate.admit(get("/jobs/2?login=" + code), t0);  // the URL the browser's history kept
  CHECK(again.reply.status == 401);
  CHECK(again.reply.body.find("used already or has expired") != std::string::npos);
  CHECK(again.reply.header("Set-Cookie").empty());
  auto late = gate.mint_login_code(t0);
  CHECK(gate.admit(get("/?login=" + late), t0 + gate.login_link_ttl() + 1s).reply.status == 401);

  auto cookie = "ddp_session_8470=" + value;
  WebRequest out = get("/logout", cookie);
  out.method = "POST";
  auto csrf = csrf_of(gate, cookie);
  out.csrf_token = csrf;
  CHECK(gate.admit(out, t0).reply.status == 303);
  CHECK_FALSE(gate.session_open(value, t0));  // a live stream it opened ends
}
