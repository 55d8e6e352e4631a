#include "common/signals.hpp"

#include <charconv>
#include <csignal>
#include <cstring>

#include <fmt/format.h>

namespace ddp::sig {

std::string signal_name(int signo) {
  const char* abbrev = signo > 0 && signo < NSIG ? ::sigabbrev_np(signo) : nullptr;
  return abbrev ? fmt::format("SIG{}", abbrev) : fmt::format("signal {}", signo);
}

std::optional<int> signal_number(std::string_view text) {
  int number = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (!text.empty() && ec == std::errc() && end == text.data() + text.size()) {
    if (number > 0 && number < NSIG) return number;
    return std::nullopt;
  }
  std::string_view bare = text.substr(0, 3) == "SIG" ? text.substr(3) : text;
  if (bare.empty()) return std::nullopt;
  for (int s = 1; s < NSIG; ++s) {
    const char* abbrev = ::sigabbrev_np(s);
    if (abbrev && bare == abbrev) return s;
  }
  return std::nullopt;
}

}  // namespace ddp::sig
