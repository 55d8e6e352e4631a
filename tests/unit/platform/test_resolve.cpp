// platform/resolve.hpp on both systems (unit_platform.exe runs it under Wine): what a host name
// resolves to, which of those addresses this machine holds, and the numeric MASTER_ADDR chosen.
#include <doctest/doctest.h>

#include "platform/resolve.hpp"

using namespace ddp::platform;

namespace {

HostAddress made_up(const char* address, bool v4, bool unusable) {
  HostAddress a;
  a.address = address;
  a.v4 = v4;
  a.unusable = unusable;
  return a;
}

}  // namespace

TEST_CASE("a numeric host is itself, held by this machine when it is loopback") {
  auto r = resolve_host("127.0.0.1");
  REQUIRE(r.error.empty());
  REQUIRE(r.addresses.size() == 1);
  CHECK(r.addresses[0].address == "127.0.0.1");
  CHECK(r.addresses[0].v4);
  CHECK(r.addresses[0].loopback);
  CHECK(r.addresses[0].local);
  CHECK(numeric_address(r) == "127.0.0.1");
}

TEST_CASE("localhost resolves to a numeric loopback address") {
  auto numeric = numeric_address(resolve_host("localhost"));
  REQUIRE(numeric);
  CHECK((*numeric == "127.0.0.1" || *numeric == "::1"));
}

TEST_CASE("an address no interface holds is not local, with the bind's reason (gloo's error 10049 on Windows)") {
  auto r = resolve_host("192.0.2.7");  // TEST-NET-1: documentation only, never assigned
  REQUIRE(r.addresses.size() == 1);
  CHECK_FALSE(r.addresses[0].local);
  CHECK_FALSE(r.addresses[0].bind_error.empty());
  CHECK(numeric_address(r) == "192.0.2.7");  // a remote store host is fine for MASTER_ADDR
}

TEST_CASE("a name that does not resolve says why; unspecified and link-local addresses are not handed out") {
  std::string why;
  auto r = resolve_host("no-such-host.invalid");
  CHECK_FALSE(r.error.empty());
  CHECK_FALSE(numeric_address(r, &why));
  CHECK(why == r.error);
  HostResolution odd;
  odd.addresses = {made_up("0.0.0.0", true, true), made_up("169.254.1.2", true, true), made_up("fe80::1", false, true),
                   made_up("2001:db8::5", false, false)};
  CHECK(numeric_address(odd) == "2001:db8::5");
  odd.addresses.push_back(made_up("10.1.2.3", true, false));
  CHECK(numeric_address(odd) == "10.1.2.3");  // IPv4 first
  odd.addresses = {odd.addresses[0]};
  CHECK_FALSE(numeric_address(odd, &why));
  CHECK(why == "only unspecified or link-local addresses");
}

TEST_CASE("link-local addresses are marked unusable") {
  auto r = resolve_host("169.254.9.9");
  REQUIRE(r.addresses.size() == 1);
  CHECK(r.addresses[0].unusable);
  CHECK_FALSE(numeric_address(r));
}
