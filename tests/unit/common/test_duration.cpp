#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include "common/duration.hpp"
#include "common/error.hpp"

using namespace ddp;

TEST_CASE("parse_duration: units, bare seconds, and what is not a duration") {
  CHECK(*parse_duration("30") == 30);
  CHECK(*parse_duration("30s") == 30);
  CHECK(*parse_duration("250ms") == doctest::Approx(0.25));
  CHECK(*parse_duration("5m") == 300);
  CHECK(*parse_duration("1.5h") == 5400);
  CHECK(*parse_duration("2h") == 7200);
  CHECK(*parse_duration("2d") == 172800);
  CHECK(*parse_duration("0") == 0);
  for (const char* bad : {"", "5 minutes", "-1s", "1e400", "nan", "inf", "s", "3w", "2H", "1.5.2s"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_duration(bad));
  }
}

TEST_CASE("format_duration: the shortest exact form parse_duration reads back") {
  CHECK(format_duration(0.25) == "250ms");
  CHECK(format_duration(0.001) == "1ms");
  CHECK(format_duration(90) == "90s");
  CHECK(format_duration(7200) == "2h");
  CHECK(format_duration(86400) == "1d");
  CHECK(format_duration(0) == "0s");
  for (double s : {0.001, 0.25, 1.0, 90.0, 120.0, 7200.0, 86400.0, 365 * 86400.0}) {
    CAPTURE(s);
    CHECK(*parse_duration(format_duration(s)) == doctest::Approx(s));
  }
}

TEST_CASE("format_seconds: a plain number of seconds") {
  CHECK(format_seconds(90) == "90");
  CHECK(format_seconds(2.5) == "2.5");
  CHECK(format_seconds(0) == "0");
}

TEST_CASE("duration_range_problem: both bounds and the sub-millisecond gap") {
  constexpr DurationRange day{0, 86400};
  CHECK_FALSE(duration_range_problem(0, day));
  CHECK_FALSE(duration_range_problem(86400, day));
  CHECK_FALSE(duration_range_problem(0.001, day));
  CHECK(*duration_range_problem(86401, day) == "must be at most 1d");
  CHECK(duration_range_problem(1e-12, day)->find("must be 0 or at least 1ms") == 0);
  CHECK(*duration_range_problem(0, DurationRange{0.001, kMaxDurationS}) == "must be at least 1ms");
  CHECK(*duration_range_problem(9.3e9, DurationRange{0, kMaxDurationS}) == "must be at most 365d");
}

TEST_CASE("parse_duration_in: a flag's value, or an error naming the flag, the forms and the range") {
  constexpr DurationRange window{1, 86400};
  CHECK(parse_duration_in("2h", window, "--gpu-low-window") == 7200);
  CHECK(parse_duration_in("90", window, "--gpu-low-window") == 90);
  auto message = [&](const char* text) {
    try {
      parse_duration_in(text, window, "--gpu-low-window");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message("soon") == "--gpu-low-window must be " + std::string(kDurationForms) + ", not 'soon'");
  CHECK(message("2d") == "--gpu-low-window must be at most 1d, not '2d'");
  CHECK(message("500ms") == "--gpu-low-window must be at least 1s, not '500ms'");
}

TEST_CASE("clamped_wait: a far, negative or NaN wait never overflows the clock's nanoseconds") {
  using std::chrono::nanoseconds;
  const auto max = nanoseconds(static_cast<std::int64_t>(kMaxTimerWaitS * 1e9));
  CHECK(clamped_wait(0) == nanoseconds(0));
  CHECK(clamped_wait(1.5) == nanoseconds(1'500'000'000));
  CHECK(clamped_wait(kMaxTimerWaitS) == max);
  // The edges of int64 nanoseconds (9.223e9 s) and beyond: all the longest wait, never negative.
  for (double far : {kMaxTimerWaitS + 1, 9.2e9, 9.223372036854775e9, 9.3e9, 1e10, 1e300, 1.7976931348623157e308,
                     std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    CAPTURE(far);
    CHECK(clamped_wait(far) == max);
    // ...and a steady_clock deadline that far stays in the future (no wrap-around).
    auto now = std::chrono::steady_clock::now();
    CHECK(now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(clamped_wait(far)) > now);
  }
  for (double past : {-0.0, -1.0, -9.3e9, -1e300, -std::numeric_limits<double>::infinity()}) {
    CAPTURE(past);
    CHECK(clamped_wait(past) == nanoseconds(0));
  }
}

TEST_CASE("format_seconds and seconds_to_millis_in: far, infinite and NaN seconds are an error, not a wrap") {
  CHECK(format_seconds(1e300) == "1e+300");
  CHECK(format_seconds(-9.3e18) == "-9.3e+18");
  constexpr DurationRange range{0, kMaxDurationS};
  CHECK(seconds_to_millis_in(30, range, "--rdzv-timeout") == std::chrono::milliseconds(30000));
  CHECK(seconds_to_millis_in(0.25, range, "--rdzv-timeout") == std::chrono::milliseconds(250));
  auto message = [&](double s) {
    try {
      seconds_to_millis_in(s, range, "--rdzv-timeout");
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(message(9.3e9) == "--rdzv-timeout must be at most 365d, not 9300000000");
  CHECK(message(1e300) == "--rdzv-timeout must be at most 365d, not 1e+300");
  CHECK(message(-1) == "--rdzv-timeout must be at least 0s, not -1");
  CHECK(message(std::numeric_limits<double>::infinity()).find("--rdzv-timeout inf is not a number of seconds") == 0);
  CHECK(message(std::numeric_limits<double>::quiet_NaN()).find("--rdzv-timeout nan is not a number of seconds") == 0);
}
