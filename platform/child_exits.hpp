#pragma once
// ChildExits: the exits of the children we were told about, as events on an Asio loop, each as soon
// as it happened (the peers' teardown goes out before the next exit is looked at).
//
// POSIX: SIGCHLD, then the watched children are reaped — and only they: another child (the
// guardian, containment.hpp) is not ours to reap. A waitid(WNOWAIT) peek names the exited child in
// O(1); a child that is not watched ends the peeking, and a scan of the watched ones (in tag order)
// reaps what the peek could not reach. Exits reaped in one pass share one time: they arrived
// together (callers decide between them by evidence, not by this order).
// Windows: a wait on each watched child's process handle (asio::windows::object_handle).
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <functional>
#include <memory>

#include "platform/spawn.hpp"

namespace ddp::platform {

struct ChildExit {
  pid_t pid = 0;
  int tag = 0;        // what watch() was given (the supervisor: the local rank)
  int exit_code = 0;  // when it exited (Windows: the whole 32-bit code, NTSTATUS crashes included)
  int signal = 0;     // the signal that ended it (Windows: the stop we sent, when that is what ended it)
  double time = 0;    // wall-clock seconds since the epoch, when it was seen
};

class ChildExits {
 public:
  using Handler = std::function<void(const ChildExit&)>;
  ChildExits(boost::asio::io_context& io, Handler on_exit);
  ~ChildExits();
  ChildExits(const ChildExits&) = delete;
  ChildExits& operator=(const ChildExits&) = delete;

  void watch(const Child& child, int tag);
  std::size_t watched() const;  // not reported yet
  void stop();                  // no more reports

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;  // shared: a posted look may outlive a stop
};

}  // namespace ddp::platform
