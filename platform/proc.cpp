// The platform-independent part of platform/proc.hpp.
#include "platform/proc.hpp"

#include <fmt/format.h>

namespace ddp::proc {

std::string describe(const std::vector<ProcessInfo>& procs) {
  if (procs.empty()) return "an unknown process";
  std::string out;
  for (const auto& p : procs) {
    if (!out.empty()) out += ", ";
    if (p.pid == 0) {
      out += "a process this user cannot see";
    } else {
      out += fmt::format("pid {} ({})", p.pid, p.cmdline.empty() ? "?" : p.cmdline);
    }
  }
  return out;
}

}  // namespace ddp::proc
