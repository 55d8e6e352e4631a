// The NCCL flight recorder's trigger: exactly the key torch's heartbeat monitor polls, in the store
// the supervisor hosts, read back by a real client; and the wait for the ranks' dump files.
#include <doctest/doctest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstring>
#include <fstream>
#include <thread>

#include "launcher/hang/flight_recorder.hpp"
#include "store/client.hpp"
#include "store/server.hpp"
#include "tests/unit/temp_dir.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;

TEST_CASE("the trigger leaves exactly /exception_dump = the blamed rank's 4 bytes, readable by a client") {
  boost::asio::io_context io;
  ddp::store::StoreServer server(io, {});
  server.start();
  trigger_flight_recorder_dump(server, 3);
  std::thread loop([&] { io.run_for(10s); });
  {
    ddp::store::StoreClient client({.port = server.port(), .timeout = 5s});
    CHECK(client.num_keys() == 1);
    CHECK(client.check({"/exception_dump"}));  // torch's client adds the "/" to "exception_dump"
    auto value = client.get("/exception_dump");
    REQUIRE(value.size() == sizeof(int));
    int rank = -1;
    std::memcpy(&rank, value.data(), sizeof rank);
    CHECK(rank == 3);
  }
  // The server belongs to the loop's thread: stopped there. Stopped from this thread, it raced the
  // loop's handling of the client's close over the session table (SIGSEGV, about 1 run in 40).
  boost::asio::post(io, [&] {
    server.stop();
    io.stop();
  });
  loop.join();
}

TEST_CASE("a fresh attempt's store no longer holds the trigger") {
  boost::asio::io_context io;
  ddp::store::StoreServer server(io, {});
  trigger_flight_recorder_dump(server, 0);
  CHECK(server.state().num_keys() == 1);
  server.reset_state();
  CHECK(server.state().num_keys() == 0);
}

TEST_CASE("the dump wait: every rank's file, or what there is when the time is up") {
  ddp::test::TempDir dir("flight_recorder_test");
  auto prefix = (dir.path / "nccl_trace_rank_").string();
  boost::asio::io_context io;
  std::optional<std::vector<std::filesystem::path>> all, partial;
  boost::asio::steady_timer later(io, 300ms);
  later.async_wait([&](boost::system::error_code) {
    std::ofstream(prefix + "0") << "pickle";
    std::ofstream(prefix + "1") << "pickle";
  });
  wait_for_flight_recorder_dumps(io, prefix, {0, 1}, 5s, [&](auto files) { all = std::move(files); });
  wait_for_flight_recorder_dumps(io, prefix, {0, 1, 2}, 800ms, [&](auto files) { partial = std::move(files); });
  auto start = std::chrono::steady_clock::now();
  io.run_for(10s);
  REQUIRE(all);
  REQUIRE(partial);
  CHECK(all->size() == 2);
  CHECK(partial->size() == 2);  // rank 2 never dumped: the wait ended at its timeout
  CHECK(std::chrono::steady_clock::now() - start < 5s);
}
