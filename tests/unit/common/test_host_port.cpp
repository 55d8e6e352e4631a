// HOST:PORT as flags take it (common/net.hpp parse_host_port).
#include <doctest/doctest.h>

#include <fmt/format.h>

#include "common/net.hpp"

using ddp::net::HostPortRules;
using ddp::net::parse_host_port;

namespace {

std::string problem(std::string_view text, HostPortRules rules = {}) {
  auto r = parse_host_port(text, rules);
  CHECK_FALSE(r.value.has_value());
  return r.problem;
}

}  // namespace

TEST_CASE("HOST:PORT: names, IPv4 and bracketed IPv6") {
  auto a = parse_host_port("node-1.example:29500");
  REQUIRE(a.value);
  CHECK(a.value->host == "node-1.example");
  CHECK(a.value->port == 29500);
  auto b = parse_host_port("127.0.0.1:1");
  REQUIRE(b.value);
  CHECK(b.value->host == "127.0.0.1");
  CHECK(b.value->port == 1);
  auto c = parse_host_port("[::1]:65535");
  REQUIRE(c.value);
  CHECK(c.value->host == "::1");
  CHECK(c.value->port == 65535);
  CHECK(a.problem.empty());
}

TEST_CASE("HOST alone: fine where the port is optional, 'no port' where it is required") {
  HostPortRules optional{.port_required = false};
  auto a = parse_host_port("node-1", optional);
  REQUIRE(a.value);
  CHECK(a.value->host == "node-1");
  CHECK_FALSE(a.value->port.has_value());
  auto b = parse_host_port("[fe80::1]", optional);
  REQUIRE(b.value);
  CHECK(b.value->host == "fe80::1");
  CHECK(problem("node-1") == "no port");
  CHECK(problem("[::1]") == "no port");
}

TEST_CASE("port 0 only where the caller allows it") {
  CHECK(problem("h:0") == "'0' is not a port number (1..65535)");
  auto any = parse_host_port("127.0.0.1:0", {.min_port = 0});
  REQUIRE(any.value);
  CHECK(any.value->port == 0);
  CHECK(problem("h:65536", {.min_port = 0}) == "'65536' is not a port number (0..65535)");
}

TEST_CASE("bad addresses say what is wrong") {
  CHECK(problem(":29500") == "no host");
  CHECK(problem("[]:29500") == "no host");
  CHECK(problem("") == "no host");
  CHECK(problem("", {.port_required = false}) == "no host");
  for (const char* port : {"", "99999", "-1", "+80", "80x", " 80", "123456", "http"}) {
    CAPTURE(port);
    CHECK(problem(std::string("h:") + port) == fmt::format("'{}' is not a port number (1..65535)", port));
  }
  CHECK(problem("::1:29500") == "write an IPv6 host as [ADDR]");
  CHECK(problem("::1", {.port_required = false}) == "write an IPv6 host as [ADDR]");
  CHECK(problem("[::1:29500") == "'[' without ']': write an IPv6 host as [ADDR]");
  CHECK(problem("[::1]29500") == "'29500' after [::1]: give [ADDR]:PORT");
}
