#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "launcher/outputs/output_lines.hpp"

using namespace ddp::launcher;
using Lines = std::vector<std::string>;

TEST_CASE("lines are cut at newlines, across reads, without the newline") {
  OutputLines s(100);
  CHECK(s.feed("a\nb") == Lines{"a"});
  CHECK(s.feed("c\n\nd") == Lines{"bc", ""});
  CHECK(s.finish() == std::optional<std::string>("d"));
  CHECK(!s.finish());
}

TEST_CASE("NUL bytes and invalid UTF-8 pass through whole") {
  OutputLines s;
  const std::string line("x\0y\xff\xfe", 5);
  CHECK(s.feed(line + "\n") == Lines{line});
}

TEST_CASE("an over-long line is shown in max_line pieces, the same however the reads cut it") {
  const std::string line(25, 'z');
  Lines whole;
  {
    OutputLines s(10);
    whole = s.feed(line + "\n");
  }
  CHECK(whole == Lines{std::string(10, 'z'), std::string(10, 'z'), std::string(5, 'z')});
  OutputLines s(10);
  Lines got;
  for (char c : line + "\n") {
    for (auto& l : s.feed(std::string_view(&c, 1))) got.push_back(l);
  }
  CHECK(got == whole);
  OutputLines exact(10);
  CHECK(exact.feed(std::string(10, 'q')).empty());  // may still grow: not shown yet
  CHECK(exact.feed("\n") == Lines{std::string(10, 'q')});
}

TEST_CASE("streams follow torchrun's redirect and tee masks") {
  // --redirects 0:3,1:0: rank 0 to its files only, rank 1 on the console only (no file).
  CHECK(route_stream(3, 0, 1, true).file);
  CHECK(!route_stream(3, 0, 1, true).console);
  CHECK(!route_stream(0, 0, 1, true).file);
  CHECK(route_stream(0, 0, 2, true).console);
  // tee: file and console; a rank filtered off the console keeps its file.
  CHECK(route_stream(0, 2, 2, true).file);
  CHECK(route_stream(0, 2, 2, true).console);
  CHECK(route_stream(1, 1, 1, false).file);
  CHECK(!route_stream(1, 1, 1, false).console);
  CHECK(!route_stream(1, 0, 2, true).file);  // stdout redirected: stderr untouched
}

TEST_CASE("route_rank: each stream by its rank's masks; ranks filtered out of the console keep their files") {
  // Local rank 0: stdout redirected; rank 1: both teed; rank 2: no entry (mask 0).
  std::vector<int> redirects{1, 0};
  std::vector<int> tee{0, 3};
  auto r0 = route_rank(redirects, tee, {}, 0);
  CHECK(r0.out.file);
  CHECK_FALSE(r0.out.console);
  CHECK_FALSE(r0.err.file);
  CHECK(r0.err.console);
  auto r1 = route_rank(redirects, tee, {true, false}, 1);
  CHECK(r1.out.file);
  CHECK(r1.err.file);
  CHECK_FALSE(r1.out.console);  // --local-ranks-filter left it out
  CHECK_FALSE(r1.err.console);
  auto r2 = route_rank(redirects, tee, {true, false}, 2);
  CHECK_FALSE(r2.out.file);
  CHECK(r2.out.console);
}
