// launcher/run/host_facts.hpp's lookups on Linux: NVML, routes, Slurm's nodes, /sys's NUMA nodes.
#include <sched.h>

#include <algorithm>
#include <fstream>

#include "common/gpu.hpp"
#include "launcher/run/host_facts.hpp"
#include "platform/net.hpp"
#include "slurm/slurm.hpp"

namespace ddp::launcher {
namespace {

// The NUMA nodes under /sys/devices/system/node, each with the CPUs of it this process may run on.
std::vector<NumaNode> read_numa_nodes() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const bool known = ::sched_getaffinity(0, sizeof allowed, &allowed) == 0;
  std::vector<NumaNode> nodes;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/sys/devices/system/node", ec)) {
    auto name = entry.path().filename().string();
    if (name.rfind("node", 0) != 0 || name.size() == 4 ||
        name.find_first_not_of("0123456789", 4) != std::string::npos) {
      continue;
    }
    std::ifstream f(entry.path() / "cpulist");
    std::string list;
    std::getline(f, list);
    NumaNode n;
    n.id = std::stoi(name.substr(4));
    for (int cpu : parse_cpu_list(list, (entry.path() / "cpulist").string())) {
      if (!known || (cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed))) n.cpus.push_back(cpu);
    }
    nodes.push_back(std::move(n));
  }
  std::sort(nodes.begin(), nodes.end(), [](const NumaNode& x, const NumaNode& y) { return x.id < y.id; });
  return nodes;
}

}  // namespace

void add_host_lookups(HostFacts& f) {
  f.count_gpus = [] {
    auto gpus = gpu::count_gpus();
    return std::pair{gpus.count, gpus.why_not};
  };
  f.hostname_is_loopback = [] { return net::hostname_is_loopback(); };
  f.interface_towards = [](const std::string& host, std::uint16_t port) { return net::interface_towards(host, port); };
  f.resolve_slurm_node = [](const std::string& node) { return slurm::resolve_node(node, std::chrono::seconds(30)); };
  f.numa_nodes = read_numa_nodes;
}

}  // namespace ddp::launcher
