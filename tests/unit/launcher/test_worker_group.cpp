// WorkerGroup's memory over many restarts (issue 25, item 3.12), with real processes.
#include <doctest/doctest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "launcher/supervisor/worker_group.hpp"
#include "tests/unit/launcher/sh_launch.hpp"

using namespace ddp::launcher;
using ddp::test::sh;

namespace {

// One attempt of `nproc` ranks that exit at once. No LogRouter here: `ended` marks both streams as
// the router does when they reach their end.
void run_attempt(WorkerGroup& group, boost::asio::io_context& io, int nproc, bool ended) {
  for (int r = 0; r < nproc; ++r) {
    auto w = std::make_unique<Worker>(io);
    w->ranks.rank = r;
    w->ranks.local_rank = r;
    auto p = group.start(std::move(w), sh("exit 0"), {}, {});
    ::close(p.stdout_fd);
    ::close(p.stderr_fd);
    if (ended) {
      group.of(r)->output.out.open = false;
      group.of(r)->output.err.open = false;
    }
  }
}

}  // namespace

TEST_CASE("earlier attempts' workers are freed once their output ended: bounded after many restarts") {
  boost::asio::io_context io;
  ddp::platform::Containment containment;
  ddp::platform::ChildExits exits(io, [](const ddp::platform::ChildExit&) {});
  WorkerGroup group(containment, exits);
  for (int attempt = 0; attempt < 60; ++attempt) {
    group.retire();
    run_attempt(group, io, 2, true);
  }
  group.retire();
  // Only the last attempt's workers are still held (the next retire frees them).
  CHECK(group.retired() <= 2);
  io.poll();  // reap
}

TEST_CASE("a retired worker whose stream is still open is kept (its aborted read completes on it)") {
  boost::asio::io_context io;
  ddp::platform::Containment containment;
  ddp::platform::ChildExits exits(io, [](const ddp::platform::ChildExit&) {});
  WorkerGroup group(containment, exits);
  for (int attempt = 0; attempt < 3; ++attempt) {
    group.retire();
    run_attempt(group, io, 2, false);
  }
  group.retire();
  CHECK(group.retired() == 6);
  io.poll();
}
