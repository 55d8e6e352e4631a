#pragma once
// StopSignals: the requests to stop that reach a process from outside, as events on its Asio loop.
// POSIX: signals (asio::signal_set). Windows: console control events (SetConsoleCtrlHandler), each
// delivered as the signal it stands for: Ctrl-C as SIGINT, Ctrl-Break as SIGTERM, the console
// window closing (and logoff, shutdown) as SIGHUP; and SIGTERM also as a named event another
// process sets (request_stop below: how the job daemon stops a supervisor it started). Windows ends a process soon
// after a close event's handler returns, whatever it does; its workers then go with their Job Objects. Like
// asio::signal_set, a signal that arrives with no wait pending is kept for the next wait.
#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>
#include <functional>
#include <memory>

#include "platform/pid.hpp"

namespace ddp::platform {

class StopSignals {
 public:
  using Handler = std::function<void(const boost::system::error_code&, int signo)>;

  explicit StopSignals(boost::asio::io_context& io);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // False when this platform cannot deliver `signo` (Windows: all but SIGINT, SIGTERM, SIGHUP).
  bool add(int signo);
  void async_wait(Handler handler);  // one signal, then wait again for the next
  void cancel();                     // a pending wait completes with operation_aborted

  struct Impl;  // opaque; public for the Windows half's console handler

 private:
  std::shared_ptr<Impl> impl_;  // shared: Windows' console handler thread may still hold it
};

// Asks process `pid` to stop as a SIGTERM does, where it listens for one (a StopSignals that added
// SIGTERM). POSIX: kill(pid, SIGTERM). Windows, where a process without our console cannot be sent
// Ctrl-Break (and Wine sends none at all): the named event "Local\\ddp-launch-stop-<pid>" that such a
// StopSignals creates and waits on, set. False when it cannot be asked (gone, or not listening).
bool request_stop(pid_t pid);

// A write to a closed pipe or socket is an error return, not the end of this process (POSIX:
// SIGPIPE ignored; Windows has no such signal).
void ignore_broken_pipes();

}  // namespace ddp::platform
