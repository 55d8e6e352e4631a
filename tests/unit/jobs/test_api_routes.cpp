// The API's route table: the docs list every route of it (jobs/README.md, HTTP API), and a request
// finds its route, or the error a client can act on.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "jobs/api_request.hpp"
#include "jobs/api_routes.hpp"

using namespace ddp::jobs;
namespace http = boost::beast::http;

namespace {

std::string row_of(const Route& r) {
  return "| `" + std::string(http::to_string(r.verb)) + " " + std::string(r.pattern) + "` | " + std::string(r.summary) +
         " |";
}

// The rows between the README's route markers.
std::vector<std::string> readme_rows() {
  std::ifstream in(DDP_JOBS_README);
  REQUIRE(in);
  std::vector<std::string> rows;
  bool inside = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("<!-- api routes:", 0) == 0) {
      inside = true;
    } else if (line.rfind("<!-- end of api routes", 0) == 0) {
      inside = false;
    } else if (inside && line.rfind("| `", 0) == 0) {
      rows.push_back(line);
    }
  }
  return rows;
}

// The ApiError a request's route lookup throws (status 0: none).
int lookup_status(http::verb verb, const std::string& target, std::string* message = nullptr) {
  HttpRequest req{verb, target, 11};
  JobId id = 0;
  try {
    find_route(req, parse_target(target), id);
    return 0;
  } catch (const ApiError& e) {
    if (message) *message = e.message;
    return e.status;
  }
}

}  // namespace

TEST_CASE("jobs/README.md lists every route of the table, in its order, with its summary") {
  std::vector<std::string> want;
  for (const auto& r : api_routes()) want.push_back(row_of(r));
  auto rows = readme_rows();
  CHECK(rows == want);
  if (rows != want) {
    std::ostringstream fix;
    for (const auto& w : want) fix << w << "\n";
    MESSAGE("jobs/README.md's table should read:\n" << fix.str());
  }
}

TEST_CASE("a request finds its route: literal segments before {id}, the job id parsed") {
  HttpRequest req{http::verb::post, "/v1/jobs/validate", 11};
  JobId id = 7;
  CHECK(find_route(req, parse_target("/v1/jobs/validate"), id).pattern == "/v1/jobs/validate");
  CHECK(id == 0);
  HttpRequest cancel{http::verb::post, "/v1/jobs/12/cancel", 11};
  CHECK(find_route(cancel, parse_target("/v1/jobs/12/cancel"), id).pattern == "/v1/jobs/{id}/cancel");
  CHECK(id == 12);
  HttpRequest submit{http::verb::post, "/v1/jobs", 11};
  CHECK(find_route(submit, parse_target("/v1/jobs"), id).verb == http::verb::post);
  HttpRequest list{http::verb::get, "/v1/jobs?state=running", 11};
  CHECK(find_route(list, parse_target("/v1/jobs?state=running"), id).verb == http::verb::get);
}

TEST_CASE("no route: 404 naming the endpoint, 405 naming the method, 400 for a job id that is none") {
  std::string message;
  CHECK(lookup_status(http::verb::get, "/v2/things", &message) == 404);
  CHECK(message == "no such endpoint: /v2/things (see GET /v1/jobs, POST /v1/jobs, /metrics)");
  CHECK(lookup_status(http::verb::get, "/v1/jobs/3/nothing", &message) == 404);
  CHECK(message == "no such endpoint: /v1/jobs/3/nothing");
  CHECK(lookup_status(http::verb::put, "/v1/jobs", &message) == 405);
  CHECK(message == "PUT is not allowed here; use GET");
  CHECK(lookup_status(http::verb::get, "/v1/jobs/3/cancel", &message) == 405);
  CHECK(message == "GET is not allowed here; use POST");
  CHECK(lookup_status(http::verb::get, "/v1/jobs/validate") == 405);
  CHECK(lookup_status(http::verb::post, "/v1/jobs/abc") == 400);
  CHECK(lookup_status(http::verb::get, "/v1/jobs/abc/nothing") == 400);
  CHECK(lookup_status(http::verb::get, "/v1/jobs/validate/x") == 400);
  CHECK(lookup_status(http::verb::get, "/healthz") == 0);
}
