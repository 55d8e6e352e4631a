#include "launcher/hang/progress_watchdog.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "common/duration.hpp"
#include "common/error.hpp"

namespace ddp::launcher {
namespace {

double seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

HangTimeout parse_hang_timeout(const std::string& value) {
  if (value == "auto") return {HangTimeout::Mode::Auto, {}};
  if (value == "off") return {HangTimeout::Mode::Off, {}};
  auto s = parse_duration(value);
  if (!s || *s <= 0 || *s > kMaxDurationS) {
    throw UsageError(
        fmt::format("--hang-timeout '{}': give auto (learn each rank's progress interval), off, or {} greater than 0 "
                    "(a rank silent that long hangs)",
                    value, kDurationForms));
  }
  if (*s < 0.001) throw UsageError(fmt::format("--hang-timeout '{}' is under 1 ms: give at least 1ms, or off", value));
  return {HangTimeout::Mode::Fixed, std::chrono::milliseconds(static_cast<long>(*s * 1000 + 0.5))};
}

std::string describe_hang_timeout(const HangTimeout& t) {
  switch (t.mode) {
    case HangTimeout::Mode::Off: return "off";
    case HangTimeout::Mode::Auto: return "auto";
    case HangTimeout::Mode::Fixed: return format_duration(std::chrono::duration<double>(t.fixed).count());
  }
  return "?";
}

std::string hang_report(const HangVerdict& v) {
  const auto& s = v.suspect();
  const std::string setting = v.setting == "auto" ? fmt::format("--hang-timeout auto: {:.1f} s learned", v.timeout_s)
                                                  : "--hang-timeout " + v.setting;
  std::string out;
  if (v.suspect_is_clear()) {
    out = fmt::format("rank {} (local {}) made no progress for {:.1f} s ({}) and went silent first: it hangs", s.rank,
                      s.local_rank, s.silent_s, setting);
  } else {
    std::vector<int> ranks;
    for (const auto& r : v.silent) ranks.push_back(r.rank);
    out = fmt::format(
        "ranks {} made no progress for {:.1f} s ({}) and went silent together (within {:.2f} s): their output "
        "cannot tell which one hangs and which wait for it in a collective",
        fmt::join(ranks, ", "), s.silent_s, setting, *v.first_by_s);
  }
  for (std::size_t i = 1; v.suspect_is_clear() && i < v.silent.size(); ++i) {
    const auto& w = v.silent[i];
    out += fmt::format(
        "\n    rank {} (local {}) waited: silent for {:.1f} s, {:.1f} s after rank {} (blocked in a "
        "collective, most likely)",
        w.rank, w.local_rank, w.silent_s, s.silent_s - w.silent_s, s.rank);
  }
  if (!v.progressing.empty()) out += fmt::format("\n    still progressing: rank(s) {}", fmt::join(v.progressing, ", "));
  if (!v.unwatched.empty()) {
    out += fmt::format(
        "\n    no progress signal from rank(s) {} (no output, no heartbeat): not judged; the hang may be theirs",
        fmt::join(v.unwatched, ", "));
  }
  if (v.other_nodes) {
    out +=
        "\n    ranks of other nodes are judged by their own supervisors: when theirs went silent first, the hang "
        "is theirs and these ranks only waited";
  }
  return out;
}

ProgressWatchdog::ProgressWatchdog(HangTimeout setting) : setting_(setting) {}

void ProgressWatchdog::begin(int attempt, const std::vector<int>& global_ranks, ProgressTime now, int world_size) {
  attempt_ = attempt;
  other_nodes_ = world_size > static_cast<int>(global_ranks.size());
  active_ = setting_.mode != HangTimeout::Mode::Off;
  began_ = now;
  ranks_.clear();
  for (int g : global_ranks) ranks_.push_back(Rank{.rank = g, .alive = true, .last = now, .events = 0, .longest = {}});
}

bool ProgressWatchdog::on_progress(int local_rank, ProgressTime t) {
  if (!active_ || local_rank < 0 || static_cast<std::size_t>(local_rank) >= ranks_.size()) return false;
  auto& r = ranks_[static_cast<std::size_t>(local_rank)];
  if (!r.alive || t < r.last) return false;
  const bool was_watched = timeout(r).has_value();
  if (r.events > 0 && t - r.last < kBurst) {
    r.last = t;
    return false;
  }
  if (r.events >= kWarmupEvents) r.longest = std::max(r.longest, std::chrono::nanoseconds(t - r.last));
  ++r.events;
  r.last = t;
  return !was_watched && timeout(r).has_value();
}

void ProgressWatchdog::forget(int local_rank) {
  if (local_rank >= 0 && static_cast<std::size_t>(local_rank) < ranks_.size())
    ranks_[static_cast<std::size_t>(local_rank)].alive = false;
}

void ProgressWatchdog::stop() { active_ = false; }

std::optional<std::chrono::milliseconds> ProgressWatchdog::timeout(const Rank& r) const {
  if (!r.alive) return std::nullopt;
  if (setting_.mode == HangTimeout::Mode::Fixed) return setting_.fixed;
  if (setting_.mode == HangTimeout::Mode::Off || r.events <= kWarmupEvents) return std::nullopt;
  auto learned = std::chrono::ceil<std::chrono::milliseconds>(r.longest * kAutoFactor);
  return std::max(kAutoFloor, learned);
}

std::optional<std::chrono::milliseconds> ProgressWatchdog::timeout_of(int local_rank) const {
  if (local_rank < 0 || static_cast<std::size_t>(local_rank) >= ranks_.size()) return std::nullopt;
  return timeout(ranks_[static_cast<std::size_t>(local_rank)]);
}

std::optional<ProgressTime> ProgressWatchdog::deadline(const Rank& r) const {
  auto t = timeout(r);
  if (!t) return std::nullopt;
  return r.last + *t;
}

std::variant<ProgressWatchdog::NotDue, ProgressWatchdog::Hung> ProgressWatchdog::check(ProgressTime now) {
  NotDue not_due;
  if (!active_) return not_due;
  const Rank* first_due = nullptr;
  bool any_watched = false;
  for (const auto& r : ranks_) {
    auto d = deadline(r);
    if (!d) continue;
    any_watched = true;
    if (*d <= now) {
      if (!first_due || r.last < first_due->last) first_due = &r;
    } else if (!not_due.next || *d < *not_due.next) {
      not_due.next = *d;
    }
  }
  if (first_due) return Hung{verdict(now, *first_due)};
  if (setting_.mode == HangTimeout::Mode::Auto && !any_watched && !noticed_) {
    if (now - began_ >= kAutoFloor) {
      noticed_ = true;
      not_due.notice = fmt::format(
          "no rank gave a progress signal (output lines, a heartbeat) in its first {} s: the hang watchdog "
          "(--hang-timeout auto) stays off until one does; give --hang-timeout SECONDS to watch silence from the "
          "start, or write to $DDP_HEARTBEAT_FILE",
          std::chrono::duration_cast<std::chrono::seconds>(kAutoFloor).count());
    } else if (!not_due.next || began_ + kAutoFloor < *not_due.next) {
      not_due.next = began_ + kAutoFloor;
    }
  }
  return not_due;
}

// The rank that went silent first is the suspect; every rank silent for at least half its own
// timeout waited with it; the others were still heard from.
HangVerdict ProgressWatchdog::verdict(ProgressTime now, const Rank& first_due) const {
  HangVerdict v;
  v.attempt = attempt_;
  v.setting = describe_hang_timeout(setting_);
  v.other_nodes = other_nodes_;
  const Rank* suspect = &first_due;
  std::vector<const Rank*> silent;
  for (const auto& r : ranks_) {
    if (!r.alive) continue;
    auto t = timeout(r);
    if (!t) {
      v.unwatched.push_back(r.rank);
    } else if (now - r.last >= *t / 2) {
      silent.push_back(&r);
      if (r.last < suspect->last) suspect = &r;
    } else {
      v.progressing.push_back(r.rank);
    }
  }
  std::stable_sort(silent.begin(), silent.end(), [&](const Rank* a, const Rank* b) {
    if ((a == suspect) != (b == suspect)) return a == suspect;
    return a->last < b->last;
  });
  v.timeout_s = seconds(*timeout(*suspect));
  if (silent.size() > 1) v.first_by_s = seconds(silent[1]->last - suspect->last);
  for (const Rank* r : silent) {
    v.silent.push_back(
        SilentRank{r->rank, static_cast<int>(r - ranks_.data()), seconds(std::chrono::nanoseconds(now - r->last))});
  }
  return v;
}

}  // namespace ddp::launcher
