#include "launcher/rendezvous/rendezvous_watchdog.hpp"

#include <fmt/format.h>

namespace ddp::launcher {

RendezvousJudgment judge_rendezvous(const RendezvousEvidence& ev, int world_size, int nnodes,
                                    std::chrono::milliseconds timeout) {
  using Verdict = RendezvousJudgment::Verdict;
  RendezvousJudgment j;
  if (!ev.own_store && ev.arrived && *ev.arrived >= world_size) {
    j.verdict = Verdict::Complete;  // the ranks' own count says so
    return j;
  }
  std::string out = fmt::format("rendezvous not complete after {} s: {} of {} ranks reached {}",
                                std::chrono::duration_cast<std::chrono::seconds>(timeout).count(),
                                ev.arrived ? std::to_string(*ev.arrived) : "?", world_size, ev.where);
  const char* never = ev.file_store ? "never reached the FileStore" : "never connected";
  bool someone_waits = false;
  for (const auto& r : ev.ranks) {
    if (r.reached) {
      someone_waits = true;
      continue;
    }
    j.missing.push_back(r.rank);
    out += fmt::format("\n    rank {} (pid {}) {}; last output:{}", r.rank, r.pid, never,
                       r.last_output.empty() ? " (nothing)" : "");
    for (const auto& l : r.last_output) out += fmt::format("\n      {}", l);
  }
  if (!ev.own_store && (j.missing.empty() || !someone_waits)) {
    j.verdict = Verdict::NoEvidence;
    return j;
  }
  if (nnodes > 1) out += "\n    (ranks of other nodes are counted, not named)";
  j.verdict = Verdict::TimedOut;
  j.report = std::move(out);
  return j;
}

}  // namespace ddp::launcher
