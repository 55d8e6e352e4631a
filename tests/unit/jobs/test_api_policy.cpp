#include <doctest/doctest.h>

#include "common/error.hpp"
#include "jobs/api_policy.hpp"

using namespace ddp::jobs;

TEST_CASE("the bearer scheme is case-insensitive (RFC 7235), its token exact") {
  CHECK(*bearer_credentials("Bearer abc") == "abc");
  CHECK(*bearer_credentials("bearer abc") == "abc");
  CHECK(*bearer_credentials("BEARER abc") == "abc");
  CHECK(*bearer_credentials("bEaReR   abc") == "abc");
  CHECK(*bearer_credentials("Bearer AbC") == "AbC");  // the token itself is case-sensitive
  CHECK_FALSE(bearer_credentials("Basic eDp5"));
  CHECK_FALSE(bearer_credentials("Bearerabc"));
  CHECK_FALSE(bearer_credentials("Bearer"));
  CHECK_FALSE(bearer_credentials(""));
  CHECK_FALSE(bearer_credentials("Bearér abc"));
}

TEST_CASE("token comparison") {
  CHECK(constant_time_equal("abc", "abc"));
  CHECK_FALSE(constant_time_equal("abd", "abc"));
  CHECK_FALSE(constant_time_equal("ab", "abc"));
  CHECK_FALSE(constant_time_equal("", ""));
}

TEST_CASE("the TCP cap leaves descriptors for the unix socket and the jobs") {
  CHECK(tcp_connection_cap(1024, std::nullopt) == 512);
  CHECK(tcp_connection_cap(1 << 20, std::nullopt) == 1024);
  CHECK(tcp_connection_cap(256, std::nullopt) == 128);
  CHECK(tcp_connection_cap(1, std::nullopt) == 1);
  CHECK(tcp_connection_cap(256, 192) == 192);
  try {
    tcp_connection_cap(256, 500);
    FAIL("a cap over the open-file limit was accepted");
  } catch (const ddp::UsageError& e) {
    std::string what = e.what();
    CHECK(what.find("--max-tcp-connections 500") != std::string::npos);
    CHECK(what.find("give at most 192") != std::string::npos);
  }
}
