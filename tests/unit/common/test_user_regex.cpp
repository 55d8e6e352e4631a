#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "common/user_regex.hpp"

using ddp::UserRegex;

TEST_CASE("user regex: the first capture group, else the whole match") {
  UserRegex loss(R"(Loss\s+([0-9.]+))");
  REQUIRE(loss.ok());
  CHECK(loss.groups() == 1);
  CHECK(loss.find("epoch 1 Loss  0.125 lr 3") == std::optional<std::string_view>("0.125"));
  CHECK_FALSE(loss.find("no numbers here"));
  UserRegex whole(R"(\d+\.\d+)");
  CHECK(whole.find("x 2.50 y") == std::optional<std::string_view>("2.50"));
  UserRegex optional_group("a(b)?c");  // a group that does not take part: the whole match
  CHECK(optional_group.find("xacx") == std::optional<std::string_view>("ac"));
  CHECK(loss.search("Loss 1"));
  CHECK_FALSE(loss.search("loss 1"));
}

TEST_CASE("user regex: a 300 KB line with .* neither crashes nor takes long") {
  std::string line = "loss=" + std::string(300'000, 'x') + "\nloss=0.5";
  auto start = std::chrono::steady_clock::now();
  UserRegex re("loss=(.*)");
  auto got = re.find(line);
  REQUIRE(got);
  CHECK(got->size() == 300'000);  // '.' stops at the newline
  std::vector<std::string_view> all;
  re.for_each(line, [&](std::string_view v) { all.push_back(v); });
  REQUIRE(all.size() == 2);
  CHECK(all[1] == "0.5");
  UserRegex nested("(x*)*y");  // exponential for a backtracking engine
  CHECK_FALSE(nested.search(std::string(100'000, 'x')));
  // Generous bound: linear matching of ~1 MB takes milliseconds; backtracking takes forever.
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
}

TEST_CASE("user regex: empty matches advance, bad patterns explain themselves") {
  int n = 0;
  UserRegex empty("x*");
  empty.for_each("abc", [&](std::string_view) { ++n; });
  CHECK(n == 4);  // before a, b, c and at the end: no endless loop
  UserRegex bad("loss=([0-9.]+");
  CHECK_FALSE(bad.ok());
  CHECK(bad.error().find("missing )") != std::string::npos);
  CHECK_FALSE(bad.find("loss=1"));
  CHECK_FALSE(UserRegex(R"((a)\1)").ok());  // RE2 has no backreferences
}
