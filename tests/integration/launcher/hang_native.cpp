// A native worker that hangs: its main thread waits for a peer that never comes (a condition
// variable in wait_for_peer), a helper thread waits too. It prints "ready" first, and installs the
// worker SDK's SIGABRT backtrace (worker/stack_dump.hpp) for the no-gdb route of the hang forensics.
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include "worker/stack_dump.hpp"

// External linkage: with ENABLE_EXPORTS the SDK's backtrace can name them.
std::mutex mu;
std::condition_variable cv;
bool peer_arrived = false;

[[gnu::noinline]] void helper_loop() {
  std::unique_lock lock(mu);
  cv.wait(lock, [] { return peer_arrived; });
}

[[gnu::noinline]] void wait_for_peer() {
  std::unique_lock lock(mu);
  std::puts("ready");
  std::fflush(stdout);
  cv.wait(lock, [] { return peer_arrived; });
}

int main() {
  ddp::worker::install_abort_backtrace();
  std::thread helper(helper_loop);
  wait_for_peer();
  helper.join();
  return 0;
}
