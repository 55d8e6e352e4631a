#pragma once
// RestartTimeline: where the time of a restart goes, from the failure seen to the next attempt's
// first progress. The shell notes each phase as it observes it; this keeps them in order (a phase
// noted twice keeps its first time; one noted before the phase it follows is ignored) and words the
// summary: "back to training in 0.42 s: stop 0.02, wait 0.00, spawn 0.01, interpreter 0.20,
// rendezvous 0.05, first step 0.14".
//
//   failure seen      the exit (or hang, rendezvous timeout) that began the teardown was reaped
//   group stopped     the failed attempt's last rank was reaped
//   gpu released      (NVML health gate) the dead ranks' GPU memory was freed
//   spawn began       the next attempt's spawning began (after the pipes' drain and any back-off)
//   spawned           its last rank was started
//   interpreter ready its first rank was heard from: a first byte of output or its store connection
//   store reached     every rank reached the store (the rendezvous; our own store only)
//   first progress    a step metric line, or output after the rendezvous
#include <array>
#include <optional>
#include <string>

#include "common/events.hpp"

namespace ddp::launcher {

enum class RestartPhase {
  FailureSeen,
  GroupStopped,
  GpuReleased,
  SpawnBegan,
  Spawned,
  InterpreterReady,
  StoreReached,
  FirstProgress,
};
inline constexpr std::size_t kRestartPhases = 8;

class RestartTimeline {
 public:
  // A failed attempt's restart begins: forget the last one's phases.
  void begin(int failed_attempt, double failure_seen);
  // The phase happened at `time` (seconds since the epoch). False when ignored: no restart under
  // way, noted already, or an earlier phase that must come first is missing (spawned before spawn began).
  bool note(RestartPhase phase, double time);
  bool active() const { return active_; }
  bool has(RestartPhase phase) const { return at(phase).has_value(); }
  std::optional<double> at(RestartPhase phase) const { return times_[static_cast<std::size_t>(phase)]; }
  int attempt() const { return failed_attempt_ + 1; }
  // Seconds from the failure to the first progress; nullopt before it.
  std::optional<double> back_in() const;
  // "back to training in 0.42 s: stop 0.02, …" (or "no progress yet after 1.20 s: …").
  std::string summary() const;
  // The event (once the restart is over: first progress, or the attempt ended before it), and done.
  events::RestartTimeline finish();

 private:
  bool active_ = false;
  int failed_attempt_ = 0;
  std::array<std::optional<double>, kRestartPhases> times_{};
};

}  // namespace ddp::launcher
