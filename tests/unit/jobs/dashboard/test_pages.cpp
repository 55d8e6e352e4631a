#include <doctest/doctest.h>

#include "jobs/dashboard/pages.hpp"

using namespace ddp::jobs::dashboard;

TEST_CASE("render substitutes and escapes; unknown keys stay") {
  CHECK(render("a {{x}} b {{y}}", {{"x", "<b>&\"'"}}) == "a &lt;b&gt;&amp;&quot;&#39; b {{y}}");
  CHECK(render("{{x}}{{x}}", {{"x", "1"}}) == "11");
  CHECK(render("no vars {{", {}) == "no vars {{");
}

TEST_CASE("content types by extension") {
  CHECK(content_type_for("a.js") == "text/javascript; charset=utf-8");
  CHECK(content_type_for("a.css") == "text/css; charset=utf-8");
  CHECK(content_type_for("a.svg") == "image/svg+xml");
  CHECK(content_type_for("a.bin") == "application/octet-stream");
}

TEST_CASE("every embedded file is there, and the pages carry the policy") {
  for (auto name :
       {"index.html", "login.html", "style.css", "app.js", "live.js", "format.js", "jobs.js", "job.js", "timeline.js",
        "charts.js", "submit.js", "host.js", "favicon.svg", "uPlot.iife.min.js", "uPlot.min.css"}) {
    INFO(name);
    const auto* a = find_asset(name);
    REQUIRE(a != nullptr);
    CHECK(a->body.size() > 100);
    CHECK(a->sha256.size() == 64);
  }
  auto login = login_page(401, "bad <token>", "/jobs?x=\"1\"");
  CHECK(login.status == 401);
  CHECK(login.body.find("bad &lt;token&gt;") != std::string::npos);
  CHECK(login.body.find("value=\"/jobs?x=&quot;1&quot;\"") != std::string::npos);
  CHECK(login.header("Referrer-Policy") == "no-referrer");
  CHECK(login.header("X-Frame-Options") == "DENY");
  auto clean = login_page(200, "", "/");
  CHECK(clean.body.find("role=\"alert\" hidden>") != std::string::npos);
  // No page refers to another origin: everything the browser loads is this daemon's.
  for (const auto& a : assets()) {
    if (a.name.ends_with(".html")) {
      CHECK(a.body.find("http://") == std::string_view::npos);
      CHECK(a.body.find("https://") == std::string_view::npos);
    }
  }
}
