// batch_node_facts (launcher/run/host_facts.hpp): pure, for checking options on the submit host.
#include <fmt/format.h>

#include "common/env_contract.hpp"
#include "launcher/run/host_facts.hpp"

namespace ddp::launcher {

HostFacts batch_node_facts(int nodes) {
  HostFacts f;
  f.env[std::string(env::kSlurmJobId)] = "1";
  f.env[std::string(env::kSlurmStepId)] = "0";
  f.env[std::string(env::kSlurmNnodes)] = std::to_string(nodes);
  f.env[std::string(env::kSlurmNodeId)] = "0";
  f.env[std::string(env::kSlurmJobNodelist)] = nodes == 1 ? "node0" : fmt::format("node[0-{}]", nodes - 1);
  f.env[std::string(env::kSlurmNtasks)] = std::to_string(nodes);
  f.cpu_count = 1;
  f.hostname = "node0";
  f.pid = 1;
  f.count_gpus = [] { return std::pair{std::optional<int>(1), std::string()}; };
  f.hostname_is_loopback = [] { return false; };
  f.resolve_slurm_node = [](const std::string&) { return std::string("127.0.0.1"); };
  f.numa_nodes = [] {
    NumaNode n;
    for (int cpu = 0; cpu < 1024; ++cpu) n.cpus.push_back(cpu);
    return std::vector<NumaNode>{n};
  };
  return f;
}

}  // namespace ddp::launcher
