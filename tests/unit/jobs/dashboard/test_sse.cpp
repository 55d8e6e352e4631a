#include <doctest/doctest.h>

#include "jobs/dashboard/sse.hpp"

using namespace ddp::jobs::dashboard;

TEST_CASE("an SSE message: event, one data line per line, a blank line") {
  CHECK(sse_message("jobs", "{\"a\":1}") == "event: jobs\ndata: {\"a\":1}\n\n");
  CHECK(sse_message("log", "a\nb") == "event: log\ndata: a\ndata: b\n\n");
  CHECK(sse_message("log", "a\r\nb\rc") == "event: log\ndata: a\ndata: b\ndata: c\n\n");
  // A trailing line break is kept: the browser's data is "a\n" (its last data line is empty).
  CHECK(sse_message("log", "a\n") == "event: log\ndata: a\ndata: \n\n");
  CHECK(sse_message("x", "") == "event: x\ndata: \n\n");
}

TEST_CASE("comments and the retry field") {
  CHECK(sse_comment("keep-alive") == ": keep-alive\n\n");
  CHECK(sse_retry(std::chrono::milliseconds(3000)) == "retry: 3000\n\n");
}
