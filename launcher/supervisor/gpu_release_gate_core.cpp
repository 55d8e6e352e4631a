// gpu_release_gate_verdict: the pure half of launcher/supervisor/gpu_release_gate.hpp.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "launcher/supervisor/gpu_release_gate.hpp"

namespace ddp::launcher {

GpuReleaseVerdict gpu_release_verdict(const std::vector<GpuMemoryNow>& now,
                                      const std::map<std::string, unsigned long long>& baseline_used,
                                      const std::vector<unsigned>& dead_pids, unsigned long long slack_bytes) {
  GpuReleaseVerdict v;
  for (const auto& d : now) {
    std::vector<unsigned> holding;
    if (d.pids) {
      for (unsigned pid : *d.pids) {
        if (std::find(dead_pids.begin(), dead_pids.end(), pid) != dead_pids.end()) holding.push_back(pid);
      }
    }
    if (!holding.empty()) {
      v.held.push_back(fmt::format("GPU {}: pid {} of the failed attempt still holds a context", d.device,
                                   fmt::join(holding, ", ")));
      continue;
    }
    auto base = baseline_used.find(d.device);
    if (base != baseline_used.end() && d.used_bytes > base->second + slack_bytes) {
      v.held.push_back(fmt::format("GPU {}: {} MiB in use, {} MiB before the run", d.device, d.used_bytes >> 20,
                                   base->second >> 20));
    }
  }
  v.released = v.held.empty();
  return v;
}

}  // namespace ddp::launcher
