#include "launcher/supervisor/restart_timeline.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace ddp::launcher {
namespace {
using P = RestartPhase;

// The phase that must be noted before this one; FailureSeen starts it all. Optional phases
// (GpuReleased, InterpreterReady, StoreReached: not every run can observe them) need none.
std::optional<RestartPhase> requires_before(RestartPhase p) {
  switch (p) {
    case P::FailureSeen: return std::nullopt;
    case P::GroupStopped: return P::FailureSeen;
    case P::GpuReleased: return P::GroupStopped;
    case P::SpawnBegan: return P::GroupStopped;
    case P::Spawned: return P::SpawnBegan;
    case P::InterpreterReady: return P::SpawnBegan;
    case P::StoreReached: return P::SpawnBegan;
    case P::FirstProgress: return P::Spawned;
  }
  return std::nullopt;
}
}  // namespace

void RestartTimeline::begin(int failed_attempt, double failure_seen) {
  times_ = {};
  active_ = true;
  failed_attempt_ = failed_attempt;
  times_[static_cast<std::size_t>(P::FailureSeen)] = failure_seen;
}

bool RestartTimeline::note(RestartPhase phase, double time) {
  if (!active_ || has(phase)) return false;
  if (auto before = requires_before(phase); before && !has(*before)) return false;
  // Never before the phase it follows (two clocks' reads of one instant may disagree by a hair).
  for (auto i = static_cast<std::size_t>(phase); i-- > 0;) {
    if (times_[i] && *times_[i] > time) time = *times_[i];
  }
  times_[static_cast<std::size_t>(phase)] = time;
  return true;
}

std::optional<double> RestartTimeline::back_in() const {
  if (!has(P::FirstProgress)) return std::nullopt;
  return *at(P::FirstProgress) - *at(P::FailureSeen);
}

std::string RestartTimeline::summary() const {
  // Each phase's share: from the latest phase noted before it.
  struct Part {
    RestartPhase phase;
    const char* word;
  };
  static constexpr Part kParts[] = {
      {P::GroupStopped, "stop"},       {P::GpuReleased, "gpu memory"},       {P::SpawnBegan, "wait"},
      {P::Spawned, "spawn"},           {P::InterpreterReady, "interpreter"}, {P::StoreReached, "rendezvous"},
      {P::FirstProgress, "first step"}};
  std::vector<std::string> parts;
  double last = at(P::FailureSeen).value_or(0);
  double end = last;
  for (const auto& part : kParts) {
    auto t = at(part.phase);
    if (!t) continue;
    parts.push_back(fmt::format("{} {:.2f}", part.word, *t - last));
    last = end = *t;
  }
  const double total = end - at(P::FailureSeen).value_or(0);
  return fmt::format("{} {:.2f} s: {}", has(P::FirstProgress) ? "back to training in" : "no progress yet after", total,
                     fmt::join(parts, ", "));
}

events::RestartTimeline RestartTimeline::finish() {
  active_ = false;
  return events::RestartTimeline{.attempt = attempt(),
                                 .failed_attempt = failed_attempt_,
                                 .failure_seen = at(P::FailureSeen).value_or(0),
                                 .group_stopped = at(P::GroupStopped),
                                 .gpu_released = at(P::GpuReleased),
                                 .spawn_began = at(P::SpawnBegan),
                                 .spawned = at(P::Spawned),
                                 .interpreter_ready = at(P::InterpreterReady),
                                 .store_reached = at(P::StoreReached),
                                 .first_progress = at(P::FirstProgress),
                                 .back_in_s = back_in(),
                                 .summary = summary()};
}

}  // namespace ddp::launcher
