#pragma once
// The rendezvous watchdog's driver: never a silent freeze at rendezvous. Owns the timer of one
// attempt's watch (--rdzv-timeout); when it expires before the ranks all reached the store, it
// gathers the evidence, asks the pure judge (launcher/rendezvous/rendezvous_watchdog.hpp) and calls back
// with a TimedOut verdict; on NoEvidence it looks again after another period, until the ranks'
// count says complete. It never touches the supervisor's machine: the supervisor emits the event
// and dispatches. (A progress watchdog follows the same pattern.)
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "launcher/rendezvous/rendezvous_watchdog.hpp"

namespace ddp::launcher {

class RendezvousWatch {
 public:
  struct Hooks {
    std::function<int()> world_size;               // the current plan's
    std::function<RendezvousEvidence()> evidence;  // what the store and /proc say now
    // The judge said TimedOut for this attempt (its report is report() from now on).
    std::function<void(int attempt, int world_size, const RendezvousEvidence&, const RendezvousJudgment&)> timed_out;
  };

  RendezvousWatch(boost::asio::io_context& io, std::chrono::milliseconds timeout, int nnodes, Hooks hooks);

  // A new attempt starts spawning: the last one's timer and completion are forgotten.
  void begin(int attempt);
  // The attempt's ranks all started: watch them for the timeout (the last report is forgotten).
  void arm(int attempt);
  // The store's count of the workers' clients; true once, when it reaches the world size (the
  // rendezvous is complete: the watch stops).
  bool on_arrivals(std::int64_t arrived);
  void cancel();

  const std::string& report() const { return report_; }  // what the last TimedOut found, for the summary

 private:
  void check(int attempt);

  boost::asio::steady_timer timer_;
  std::chrono::milliseconds timeout_;
  int nnodes_;
  Hooks hooks_;
  int attempt_ = -1;
  bool complete_ = false;
  std::string report_;
};

}  // namespace ddp::launcher
