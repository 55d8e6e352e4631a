#pragma once
// Durations as people write them in job files and flags: "30s", "5m", "1.5h", "2d", "250ms" or a
// bare number of seconds. One parser for every reader, with the range each value must fall in.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ddp {

// "10s", "5m", "1.5h", "2d", "250ms" or a bare number of seconds → seconds; nullopt when
// malformed, negative or not finite.
std::optional<double> parse_duration(std::string_view text);

// The values a duration accepts. Besides [min_s, max_s], a value between 0 and 1 ms is refused:
// timers count whole milliseconds (1e-12 would be 0, "no wait").
struct DurationRange {
  double min_s = 0;
  double max_s = 0;
};
inline constexpr double kMaxDurationS = 365.0 * 86400;  // far below int64 nanoseconds' 292 years

// Why `seconds` is outside `range` ("must be at most 1d"); nullopt when inside.
std::optional<std::string> duration_range_problem(double seconds, DurationRange range);

// A wait in seconds that came from outside (a worker's timer request, a peer's record), as a timer
// takes it: NaN, negative and infinite values and those past kMaxTimerWaitS are clamped into
// [0, kMaxTimerWaitS]. Converted unchecked, a far value overflows the clock's int64 nanoseconds
// (9.2e9 s) into a negative wait that fires at once, every time it is re-armed: a spinning loop. A
// timer armed for the maximum wakes once, finds nothing due and re-arms. NaN counts as "far".
inline constexpr double kMaxTimerWaitS = 86400;
std::chrono::nanoseconds clamped_wait(double seconds);

// For flags and variables given as a number of seconds: `seconds` as milliseconds, or a
// UsageError naming `what` when it is not finite or outside `range` (duration_range_problem).
std::chrono::milliseconds seconds_to_millis_in(double seconds, DurationRange range, std::string_view what);

// 0.001 → "1ms", 86400 → "1d", 90 → "90s": the shortest exact form parse_duration reads back.
std::string format_duration(double seconds);

// How old something is, for people: "42 s", "3 min", "5 h", "2 days" (rounded; negative reads as 0).
std::string describe_age(double seconds);

// A number of seconds as a flag or a message takes it: 90 → "90", 2.5 → "2.5" (no unit).
std::string format_seconds(double seconds);

// The form parse_duration reads, for messages: "a duration such as 30s, 5m, ...".
inline constexpr std::string_view kDurationForms = "a duration such as 30s, 5m, 1.5h, 2d, 250ms or a number of seconds";

// For flags and other single values: the seconds `text` means, or a UsageError naming `what`
// (e.g. "--gpu-low-window"), the forms accepted and the range.
double parse_duration_in(std::string_view text, DurationRange range, std::string_view what);

}  // namespace ddp
