#pragma once
// Signal names and numbers, one way for every reader and writer: "SIGTERM" <-> 15 (Linux's
// numbering and names, on Windows too: platform/signal_numbers.hpp).
#include <optional>
#include <string>
#include <string_view>

#include "platform/signal_numbers.hpp"  // sig::kTerm, sig::kKill …: the numbers on every platform

namespace ddp::sig {

// 15 → "SIGTERM"; a number with no name → "signal 99".
std::string signal_name(int signo);

// "SIGTERM", "TERM" or "15" → 15; nullopt for anything else (unknown names, 0, out of range).
std::optional<int> signal_number(std::string_view text);

}  // namespace ddp::sig
