// Shell of launcher/host_facts.hpp.
#include "launcher/host_facts.hpp"

#include <fmt/format.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <thread>

#include "common/env_contract.hpp"
#include "common/gpu.hpp"
#include "launcher/slurm.hpp"
#include "platform/net.hpp"

extern char** environ;

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

HostFacts gather_host_facts() {
  HostFacts f;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) f.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  f.cpu_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) f.hostname = name;
  std::error_code ec;
  f.temp_dir = std::filesystem::temp_directory_path(ec);
  if (ec) f.temp_dir = "/tmp";
  f.pid = static_cast<int>(::getpid());
  std::random_device rd;
  f.random_id = fmt::format("{:08x}", rd());
  f.count_gpus = [] {
    auto gpus = gpu::count_gpus();
    return std::pair{gpus.count, gpus.why_not};
  };
  f.hostname_is_loopback = [] { return net::hostname_is_loopback(); };
  f.interface_towards = [](const std::string& host, std::uint16_t port) { return net::interface_towards(host, port); };
  f.resolve_slurm_node = [](const std::string& node) { return slurm::resolve_node(node, std::chrono::seconds(30)); };
  f.numa_nodes = read_numa_nodes;
  return f;
}

}  // namespace ddp::launcher
