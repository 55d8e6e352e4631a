#include "common/signals.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>

#include "platform/signal_numbers.hpp"

namespace ddp::sig {
namespace {

// Linux's names (glibc's sigabbrev_np), the same on every platform: Windows builds report exits
// and stop requests in this vocabulary too. Real-time signals (32 ..) have no name.
constexpr std::array<const char*, 32> kNames = {nullptr,  "HUP",  "INT",    "QUIT", "ILL",   "TRAP", "ABRT", "BUS",
                                                "FPE",    "KILL", "USR1",   "SEGV", "USR2",  "PIPE", "ALRM", "TERM",
                                                "STKFLT", "CHLD", "CONT",   "STOP", "TSTP",  "TTIN", "TTOU", "URG",
                                                "XCPU",   "XFSZ", "VTALRM", "PROF", "WINCH", "IO",   "PWR",  "SYS"};

const char* abbrev_of(int signo) {
  return signo > 0 && static_cast<std::size_t>(signo) < kNames.size() ? kNames[static_cast<std::size_t>(signo)]
                                                                      : nullptr;
}

}  // namespace

std::string signal_name(int signo) {
  const char* abbrev = abbrev_of(signo);
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", signo);
}

std::optional<int> signal_number(std::string_view text) {
  int number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (!text.empty() && ec == std::errc() && end == text.data() + text.size()) {
    if (number > 0 && number < kLimit) return number;
    return std::nullopt;
  }
  std::string_view bare = text.substr(0, 3) == "SIG" ? text.substr(3) : text;
  if (bare.empty()) return std::nullopt;
  for (int s = 1; s < static_cast<int>(kNames.size()); ++s) {
    const char* abbrev = abbrev_of(s);
    if (abbrev && bare == abbrev) return s;
  }
  return std::nullopt;
}

}  // namespace ddp::sig
