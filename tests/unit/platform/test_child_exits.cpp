// platform/child_exits.hpp: exits as events on an Asio loop, with real processes (Linux and Wine).
#include <doctest/doctest.h>

#include <map>
#include <thread>

#include "platform/child_exits.hpp"
#include "platform/signal_numbers.hpp"
#include "test_child.hpp"

using namespace ddp;
using namespace std::chrono_literals;

namespace {

// Runs the loop until `count` exits arrived (20 s at most).
std::map<int, platform::ChildExit> wait_exits(boost::asio::io_context& io, std::map<int, platform::ChildExit>& exits,
                                              std::size_t count) {
  const auto deadline = std::chrono::steady_clock::now() + 20s;
  while (exits.size() < count && std::chrono::steady_clock::now() < deadline) io.run_for(50ms);
  return exits;
}

}  // namespace

TEST_CASE("exit codes and kills arrive by tag, each once") {
  boost::asio::io_context io;
  std::map<int, platform::ChildExit> exits;
  platform::ChildExits watcher(io, [&](const platform::ChildExit& x) {
    CHECK(exits.count(x.tag) == 0);
    exits[x.tag] = x;
  });
  auto a = spawn_process(test::child_request({"exit", "0"}));
  auto b = spawn_process(test::child_request({"sleep", "60000"}));
  auto c = spawn_process(test::child_request({"exit", "42"}));
  REQUIRE_MESSAGE(a.ok(), a.what << ": " << a.error);
  REQUIRE_MESSAGE(b.ok(), b.what << ": " << b.error);
  REQUIRE_MESSAGE(c.ok(), c.what << ": " << c.error);
  watcher.watch(a.child, 0);
  watcher.watch(b.child, 1);
  watcher.watch(c.child, 2);
  CHECK(b.child.signal_group(sig::kKill));
  wait_exits(io, exits, 3);
  REQUIRE(exits.size() == 3);
  CHECK(exits[0].exit_code == 0);
  CHECK(exits[0].signal == 0);
  CHECK(exits[0].pid == a.child.pid());
  CHECK(exits[1].signal == sig::kKill);  // Windows: the job ended by us, told as SIGKILL
  CHECK(exits[2].exit_code == 42);
  CHECK(exits[2].time > 0);
  CHECK(watcher.watched() == 0);
}

TEST_CASE("a child that exited before it was watched is still reported") {
  boost::asio::io_context io;
  std::map<int, platform::ChildExit> exits;
  platform::ChildExits watcher(io, [&](const platform::ChildExit& x) { exits[x.tag] = x; });
  auto a = spawn_process(test::child_request({"exit", "7"}));
  REQUIRE(a.ok());
  std::this_thread::sleep_for(500ms);
  io.poll();  // its SIGCHLD (POSIX) comes and goes before the watch
  watcher.watch(a.child, 5);
  wait_exits(io, exits, 1);
  REQUIRE(exits.count(5));
  CHECK(exits[5].exit_code == 7);
}
