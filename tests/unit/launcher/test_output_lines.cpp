#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "launcher/output_lines.hpp"

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
