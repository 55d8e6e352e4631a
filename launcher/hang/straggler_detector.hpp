#pragma once
// Stragglers: a rank that keeps the others waiting, found from when each rank reports a completed
// step (a metric line with a new step; a heartbeat). Pure: (rank, time) in, verdicts out; the
// supervisor feeds it the metric rows (StragglerWatch) and reports what it finds.
//
// What is measured. In a DDP job every step ends in a collective, so every rank's step PERIOD is
// the slowest rank's: a rate per rank cannot tell them apart. What differs is how long each rank
// takes to REACH the collective. When ranks report a step before its collective (a metric line
// printed before the backward pass / all_reduce), the slow rank's report comes late at every step,
// and the fast ranks' next reports come only after it (they waited for it). So while the ranks'
// reports are in lockstep, a rank's step time at step k is
//   from the group's release from step k-1 (the LAST rank's report of step k-1)
//   to its own report of step k.
// Lockstep is what a per-step collective guarantees: no rank ever reports step k+1 before every
// rank reported step k. Once a rank does (by more than kResolutionS: the supervisor may read two
// pipes in either order), the ranks do not wait for each other, and a rank's step time is its own
// interval between its reports of steps k-1 and k: its plain step period (back to lockstep after a
// window's worth of reports without such a lead). Both readings are kept, and while in lockstep
// the release-based one is used unless it has been the less steady one over the attempt (the sum of
// its windows' median absolute deviations above the own intervals'): ranks that do not wait for
// each other but happen to stay within a step of each other drift, and their release-based times
// wander with the drift, while a DDP rank's time to reach the collective is as steady as its work.
//
// Scoring (NVIDIA's ft_launcher scores a rank's median step time against a reference and flags it
// under 0.75; hang-detection-facts.md): a rank's step time is the median of its last kWindow
// samples, its rate the inverse; its ratio = its rate ÷ the median rate of all ranks with a full
// window. With two ranks that median is their mean: a rank is reported when it is more than 1.67×
// slower than the other (at 0.75). A ratio under the threshold is reported once per episode; the
// episode ends when the ratio is back above halfway between the threshold and 1 (a rank hovering
// at the threshold is not reported at every step).
//
// kWindow = 10: a median of 10 ignores up to 4 odd samples (a slow first step, a checkpoint or an
// evaluation, scheduling noise of a loaded host), and fills after 11 reports, so a rank slowed by
// 0.3 s per step is reported around step 11-12 (well inside 20). A longer window reports later and
// notices a recovery later; a shorter one lets two or three odd steps decide.
//
// Not seen: ranks that report a step only after its collective (every rank then reports at the
// same moment: nothing tells them apart; print the step line before the collective), and a rank
// that stops completely (no reports: the hang watchdog's business). Needs two ranks that report.
// Ranks that never wait for each other and stay within one step of each other can read as lockstep
// (always when they do not drift at all: their timestamps are exactly a DDP straggler's; in a
// simulation of such ranks with ±20 % jitter and random start offsets, 7 to 9 runs in 100): out of phase
// by more than 40 % of a step (two ranks), the last one then reads as slow.
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "launcher/outputs/metrics.hpp"

namespace ddp::launcher {

struct StragglerVerdict {
  int rank = 0;
  double ratio = 0;          // its step rate ÷ the median step rate of all ranks (< threshold)
  double median_step_s = 0;  // the inverse of the median rate
  double rank_step_s = 0;    // this rank's
};

class StragglerDetector {
 public:
  static constexpr std::size_t kWindow = 10;
  // Step times below this are read as this: the supervisor stamps a report when it reads the pipe,
  // so ranks that all report within a few milliseconds of each other are equal, whatever the order
  // the loop happened to read them in.
  static constexpr double kResolutionS = 0.02;
  // Below this difference in steadiness (per window) the two readings are equally steady.
  static constexpr double kSteadinessTieS = 0.001;

  // threshold: 0 < threshold < 1 (--straggler-threshold).
  explicit StragglerDetector(double threshold);

  // `rank` completed a step at `time_s` (any monotonic clock, seconds). A verdict when this report
  // makes the rank a straggler (once per episode).
  std::optional<StragglerVerdict> on_step(int rank, double time_s);

  // Forget everything (a new attempt: new processes, new pace).
  void reset();

  double threshold() const { return threshold_; }

 private:
  static constexpr std::size_t kHistory = 4;  // report times kept per rank
  struct Rank {
    std::int64_t steps = 0;    // reports so far
    std::deque<double> times;  // of the last kHistory reports
    std::deque<double> paced;  // step times from the group's release, the last kWindow
    std::deque<double> own;    // step times from its own last report, the last kWindow
    bool flagged = false;      // in a straggler episode
    // Sums over the attempt of each full window's median absolute deviation, for both readings.
    double unsteady_paced = 0, unsteady_own = 0;
    std::size_t windows = 0;
    // The time of its report of step `step`, if still kept.
    std::optional<double> time_of(std::int64_t step) const;
  };
  bool someone_led(int rank, double time_s) const;
  std::optional<double> paced_time(int rank, double time_s) const;
  bool paced_reading() const;
  std::optional<double> median_rate(bool paced) const;

  double threshold_;
  std::map<int, Rank> ranks_;
  bool lockstep_ = true;
  std::size_t reports_without_lead_ = 0;
};

// The median of `values` (the mean of the middle two for an even count); nullopt when empty.
std::optional<double> median(std::deque<double> values);
// The median absolute deviation from the median; 0 when empty.
double median_deviation(const std::deque<double>& values);

// The shell's input: metric rows → step reports. A row with a step counts when its (epoch, step)
// is past any its rank reported in this attempt (several metrics of one step are one report; a
// metric logged less often never goes back). A metric whose step goes back (batch indices that
// restart every epoch, `Epoch: [1][ 10/500]`) starts its next epoch: its steps count again, instead
// of being dropped as old ones until the end of the run. A row of a later attempt starts over (new
// processes); rows of an earlier one are ignored.
class StragglerWatch {
 public:
  explicit StragglerWatch(double threshold) : detector_(threshold) {}
  std::optional<StragglerVerdict> on_row(const MetricRow& row, double time_s);
  double threshold() const { return detector_.threshold(); }

 private:
  StragglerDetector detector_;
  int attempt_ = -1;
  using Progress = std::pair<std::int64_t, double>;  // (epoch, step)
  struct Sequence {
    double last = 0;         // the metric's last step
    std::int64_t epoch = 0;  // how often its step went back
  };
  std::map<std::pair<int, std::string>, Sequence> sequences_;  // (rank, metric) in attempt_
  std::map<int, Progress> highest_;                            // rank → furthest reported in attempt_
};

// "rank 1 is a straggler: 0.41× the median step rate (0.52 s/step vs 0.21 s/step)
// (--straggler-threshold 0.75)"
std::string straggler_warning(const StragglerVerdict& v, double threshold);

// --straggler-threshold's value: a number strictly between 0 and 1, or "off" (nullopt). Anything
// else is a ddp::UsageError naming the flag, the value and what to give.
std::optional<double> parse_straggler_threshold(const std::string& value);

}  // namespace ddp::launcher
