// Signal names and numbers (common/signals.hpp).
#include <doctest/doctest.h>

#include <csignal>

#include "common/signals.hpp"

using ddp::sig::signal_name;
using ddp::sig::signal_number;

TEST_CASE("signal_name: SIG + the abbreviation, or 'signal N' when there is none") {
  CHECK(signal_name(SIGTERM) == "SIGTERM");
  CHECK(signal_name(SIGKILL) == "SIGKILL");
  CHECK(signal_name(SIGUSR1) == "SIGUSR1");
  CHECK(signal_name(0) == "signal 0");
  CHECK(signal_name(-3) == "signal -3");
  CHECK(signal_name(NSIG + 5) == "signal " + std::to_string(NSIG + 5));
}

TEST_CASE("signal_number: 'SIGTERM', 'TERM' and '15' all mean SIGTERM") {
  CHECK(signal_number("SIGTERM") == SIGTERM);
  CHECK(signal_number("TERM") == SIGTERM);
  CHECK(signal_number(std::to_string(SIGTERM)) == SIGTERM);
  CHECK(signal_number("SIGUSR1") == SIGUSR1);
  CHECK(signal_number("HUP") == SIGHUP);
}

TEST_CASE("signal_number: anything else is no signal") {
  for (const char* bad : {"", "SIG", "SIGFOO", "sigterm", "term", "0", "-15", "15x", " 15", "SIG15", "99999"}) {
    CAPTURE(bad);
    CHECK_FALSE(signal_number(bad).has_value());
  }
  CHECK_FALSE(signal_number(std::to_string(NSIG)).has_value());
}

TEST_CASE("signal_name and signal_number read each other back for every named signal") {
  for (int s = 1; s < NSIG; ++s) {
    auto name = signal_name(s);
    if (name.rfind("SIG", 0) != 0) continue;
    CAPTURE(s);
    CHECK(signal_number(name) == s);
  }
}
