// launcher/run/host_facts.hpp's lookups in the Windows build: NVML (nvml.dll) as on Linux; routes,
// Slurm and NUMA nodes have no Windows source here — the rules that would use them are refused
// first (HostFacts::windows).
#include "common/gpu.hpp"
#include "launcher/run/host_facts.hpp"

namespace ddp::launcher {

void add_host_lookups(HostFacts& f) {
  f.count_gpus = [] {
    auto gpus = gpu::count_gpus();
    return std::pair{gpus.count, gpus.why_not};
  };
  f.hostname_is_loopback = [] { return false; };
  f.numa_nodes = [] { return std::vector<NumaNode>{}; };
}

}  // namespace ddp::launcher
