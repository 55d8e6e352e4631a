#pragma once
// The progress watchdog's driver: ONE steady_timer, set to the earliest deadline the pure judge
// (launcher/hang/progress_watchdog.hpp) names. Progress only records a time in the judge: no timer is
// re-armed per output. When the timer fires the judge looks again: a rank that progressed
// meanwhile moved its deadline, so the timer is re-armed for the new earliest one, or the verdict
// goes to the supervisor (hooks.hung), which emits the event and dispatches HangDetected. While
// nothing is due nothing wakes: in auto mode before any rank is watched the timer waits only for
// the one-time notice, afterwards for the earliest deadline. Same pattern as RendezvousWatch.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/hang/progress_watchdog.hpp"

namespace ddp::launcher {

class HeartbeatFiles;

class ProgressWatch {
 public:
  struct Hooks {
    std::function<void(const HangVerdict&)> hung;    // once per attempt; the watch stops
    std::function<void(const std::string&)> notice;  // auto found no progress signal (once)
  };

  ProgressWatch(boost::asio::io_context& io, HangTimeout setting, Hooks hooks);
  ~ProgressWatch();

  // Heartbeat files in `dir` (launcher/hang/heartbeat_files.hpp) count as progress from now on (the
  // last directory's watch ends); nothing when off.
  void watch_heartbeats(const std::filesystem::path& dir);
  // The local rank's $DDP_HEARTBEAT_FILE; empty when there is none.
  std::string heartbeat_file(int local_rank) const;

  // The attempt's ranks (global ranks by local rank) were all spawned: watch them from now.
  void begin(int attempt, const std::vector<int>& global_ranks, int world_size = 0);
  // Progress evidence of a local rank of the current attempt (output, a heartbeat; the
  // torch elastic timer's requests may report here too). Cheap: a time recorded.
  void on_progress(int local_rank, ProgressTime t = ProgressClock::now());
  void forget(int local_rank);  // the rank exited
  void stop();                  // the group is stopping or over

  const HangTimeout& setting() const { return judge_.setting(); }
  // For tests: the timer's wake-ups so far, and whether it is armed.
  int wakeups() const { return wakeups_; }
  bool armed() const { return armed_for_.has_value(); }

 private:
  void check();
  void arm(ProgressTime at);

  boost::asio::io_context& io_;
  std::unique_ptr<HeartbeatFiles> heartbeats_;
  boost::asio::steady_timer timer_;
  ProgressWatchdog judge_;
  Hooks hooks_;
  std::optional<ProgressTime> armed_for_;
  int generation_ = 0;  // a fired handler of a cancelled arm does nothing
  int wakeups_ = 0;
};

}  // namespace ddp::launcher
