#include "common/duration.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>

#include "common/error.hpp"

namespace ddp {

std::optional<double> parse_duration(std::string_view text) {
  std::string s(text);
  if (s.empty()) return std::nullopt;
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (!std::isfinite(v) || v < 0) return std::nullopt;
  auto unit = s.substr(used);
  if (unit.empty() || unit == "s") return v;
  if (unit == "ms") return v / 1000;
  if (unit == "m") return v * 60;
  if (unit == "h") return v * 3600;
  if (unit == "d") return v * 86400;
  return std::nullopt;
}

std::string format_duration(double seconds) {
  for (auto [unit, size] : {std::pair{"d", 86400.0}, {"h", 3600.0}, {"m", 60.0}}) {
    if (seconds >= size && std::fmod(seconds, size) == 0) return fmt::format("{}{}", seconds / size, unit);
  }
  if (seconds > 0 && seconds < 1) return fmt::format("{}ms", seconds * 1000);
  return fmt::format("{}s", seconds);
}

std::string format_seconds(double seconds) {
  // Whole numbers without ".0"; beyond 2^53 a double has no fraction and the cast could overflow.
  if (std::abs(seconds) < 9e15 && seconds == std::floor(seconds)) {
    return fmt::format("{}", static_cast<long long>(seconds));
  }
  return fmt::format("{}", seconds);
}

std::string describe_age(double seconds) {
  seconds = std::isfinite(seconds) ? std::max(0.0, seconds) : 0.0;
  if (seconds < 120) return fmt::format("{:.0f} s", seconds);
  if (seconds < 2 * 3600) return fmt::format("{:.0f} min", seconds / 60);
  if (seconds < 2 * 86400) return fmt::format("{:.0f} h", seconds / 3600);
  return fmt::format("{:.0f} days", seconds / 86400);
}

std::optional<std::string> duration_range_problem(double seconds, DurationRange range) {
  if (seconds > range.max_s) return fmt::format("must be at most {}", format_duration(range.max_s));
  if (seconds < range.min_s) return fmt::format("must be at least {}", format_duration(range.min_s));
  if (seconds > 0 && seconds < 0.001) return "must be 0 or at least 1ms (timers count whole milliseconds)";
  return std::nullopt;
}

double parse_duration_in(std::string_view text, DurationRange range, std::string_view what) {
  auto v = parse_duration(text);
  if (!v) throw UsageError(fmt::format("{} must be {}, not '{}'", what, kDurationForms, text));
  if (auto why = duration_range_problem(*v, range)) throw UsageError(fmt::format("{} {}, not '{}'", what, *why, text));
  return *v;
}

std::chrono::nanoseconds clamped_wait(double seconds) {
  if (std::isnan(seconds) || seconds > kMaxTimerWaitS) seconds = kMaxTimerWaitS;
  if (seconds < 0) seconds = 0;
  return std::chrono::nanoseconds(static_cast<std::int64_t>(seconds * 1e9));
}

std::chrono::milliseconds seconds_to_millis_in(double seconds, DurationRange range, std::string_view what) {
  if (!std::isfinite(seconds)) {
    throw UsageError(fmt::format("{} {} is not a number of seconds: give e.g. 30 (at most {})", what, seconds,
                                 format_duration(range.max_s)));
  }
  if (auto why = duration_range_problem(seconds, range)) {
    throw UsageError(fmt::format("{} {}, not {}", what, *why, format_seconds(seconds)));
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(seconds * 1000 + 0.5));
}

}  // namespace ddp
