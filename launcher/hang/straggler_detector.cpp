#include "launcher/hang/straggler_detector.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#include "common/error.hpp"

namespace ddp::launcher {

std::optional<double> median(std::deque<double> values) {
  if (values.empty()) return std::nullopt;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double median_deviation(const std::deque<double>& values) {
  auto m = median(values);
  if (!m) return 0;
  std::deque<double> deviations;
  for (double v : values) deviations.push_back(std::abs(v - *m));
  return *median(std::move(deviations));
}

StragglerDetector::StragglerDetector(double threshold) : threshold_(threshold) {}

void StragglerDetector::reset() {
  ranks_.clear();
  lockstep_ = true;
  reports_without_lead_ = 0;
}

std::optional<double> StragglerDetector::Rank::time_of(std::int64_t step) const {
  const std::int64_t back = steps - step;  // 0: the last report
  if (back < 0 || back >= static_cast<std::int64_t>(times.size())) return std::nullopt;
  return times[times.size() - 1 - static_cast<std::size_t>(back)];
}

// `rank` reports its next step j at time_s: did another rank report step j+1 clearly before (a
// lead a per-step collective rules out)? Within kResolutionS it is only the order the supervisor
// read the two pipes in.
bool StragglerDetector::someone_led(int rank, double time_s) const {
  const std::int64_t j = ranks_.at(rank).steps + 1;
  for (const auto& [other, r] : ranks_) {
    if (other == rank || r.steps < j + 1) continue;
    auto led_at = r.time_of(j + 1);
    if (!led_at || *led_at < time_s - kResolutionS) return true;  // no longer kept: long ago
  }
  return false;
}

// This rank's report of its step k at time_s, measured from the group's release from step k-1 (the
// last report of it); nullopt while a rank has not reported step k-1 (or did so too long ago).
std::optional<double> StragglerDetector::paced_time(int rank, double time_s) const {
  const Rank& me = ranks_.at(rank);
  double release = me.times.back();
  for (const auto& [other, r] : ranks_) {
    auto at = r.time_of(me.steps);  // its report of step k-1
    if (!at) return std::nullopt;
    release = std::max(release, *at);
  }
  return time_s - release;
}

// In lockstep, the release-based reading unless it has been less steady than the own intervals over
// the attempt so far (ties, as with no jitter at all, go to lockstep).
bool StragglerDetector::paced_reading() const {
  if (!lockstep_) return false;
  double paced = 0, own = 0, windows = 0;
  for (const auto& [rank, r] : ranks_) {
    paced += r.unsteady_paced;
    own += r.unsteady_own;
    windows += static_cast<double>(r.windows);
  }
  return paced <= own + kSteadinessTieS * windows;
}

std::optional<double> StragglerDetector::median_rate(bool paced) const {
  std::deque<double> rates;
  for (const auto& [rank, r] : ranks_) {
    const auto& samples = paced ? r.paced : r.own;
    if (samples.size() == kWindow) rates.push_back(1 / std::max(*median(samples), kResolutionS));
  }
  if (rates.size() < 2) return std::nullopt;  // a straggler needs others to straggle behind
  return median(std::move(rates));
}

std::optional<StragglerVerdict> StragglerDetector::on_step(int rank, double time_s) {
  Rank& me = ranks_[rank];
  if (someone_led(rank, time_s)) {
    reports_without_lead_ = 0;
    lockstep_ = false;
  } else if (++reports_without_lead_ >= kWindow * ranks_.size()) {
    lockstep_ = true;
  }
  if (!me.times.empty()) {
    const double own = time_s - me.times.back();
    me.own.push_back(std::max(0.0, own));
    me.paced.push_back(std::max(0.0, paced_time(rank, time_s).value_or(own)));
    if (me.own.size() > kWindow) me.own.pop_front();
    if (me.paced.size() > kWindow) me.paced.pop_front();
    // Evidence from the third step on, from the ranks that waited (the last rank's readings agree).
    if (me.own.size() >= 3 && me.own != me.paced) {
      me.unsteady_paced += median_deviation(me.paced);
      me.unsteady_own += median_deviation(me.own);
      ++me.windows;
    }
  }
  me.times.push_back(time_s);
  if (me.times.size() > kHistory) me.times.pop_front();
  ++me.steps;
  // Recovery is judged in lockstep's own reading: a reading chosen by steadiness could flip back
  // and forth and end an episode that did not end.
  const bool paced = me.flagged ? lockstep_ : paced_reading();
  const auto& samples = paced ? me.paced : me.own;
  if (samples.size() < kWindow) return std::nullopt;
  auto group = median_rate(paced);
  if (!group) return std::nullopt;
  const double own_s = std::max(*median(samples), kResolutionS);
  const double ratio = (1 / own_s) / *group;
  if (me.flagged) {
    if (ratio >= (1 + threshold_) / 2) me.flagged = false;  // recovered: a new episode may begin
    return std::nullopt;
  }
  if (ratio >= threshold_) return std::nullopt;
  me.flagged = true;
  return StragglerVerdict{rank, ratio, 1 / *group, own_s};
}

std::optional<StragglerVerdict> StragglerWatch::on_row(const MetricRow& row, double time_s) {
  if (!row.step || row.attempt < attempt_) return std::nullopt;
  if (row.attempt > attempt_) {
    attempt_ = row.attempt;
    highest_.clear();
    sequences_.clear();
    detector_.reset();
  }
  // A metric's step that goes back starts its next epoch (per-epoch batch indices: the ImageNet
  // example's `Epoch: [1][ 10/500]`); compared per metric, so a metric logged less often (its own
  // smaller steps) never reads as a new epoch.
  auto [seq, fresh] = sequences_.try_emplace({row.rank, row.name}, Sequence{*row.step, 0});
  if (!fresh && *row.step < seq->second.last) ++seq->second.epoch;
  seq->second.last = *row.step;
  const Progress at{seq->second.epoch, *row.step};
  auto [it, first] = highest_.try_emplace(row.rank, at);
  if (!first) {
    if (at <= it->second) return std::nullopt;  // another metric of a step already counted
    it->second = at;
  }
  return detector_.on_step(row.rank, time_s);
}

std::string straggler_warning(const StragglerVerdict& v, double threshold) {
  return fmt::format(
      "rank {} is a straggler: {:.2f}× the median step rate ({:.2f} s/step vs {:.2f} s/step) "
      "(--straggler-threshold {:g})",
      v.rank, v.ratio, v.rank_step_s, v.median_step_s, threshold);
}

std::optional<double> parse_straggler_threshold(const std::string& value) {
  if (value == "off") return std::nullopt;
  double r = 0;
  const char* end = value.data() + value.size();
  auto [ptr, ec] = std::from_chars(value.data(), end, r);
  if (value.empty() || ec != std::errc() || ptr != end || !std::isfinite(r)) {
    throw UsageError(fmt::format(
        "--straggler-threshold '{}' is not a number: give a ratio between 0 and 1 (e.g. 0.75), or off", value));
  }
  if (r <= 0 || r >= 1) {
    throw UsageError(fmt::format(
        "--straggler-threshold {} is out of range: give a ratio strictly between 0 and 1 (a rank slower than "
        "that fraction of the median step rate is reported; e.g. 0.75), or off",
        value));
  }
  return r;
}

}  // namespace ddp::launcher
