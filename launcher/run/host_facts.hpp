#pragma once
// HostFacts: what `ddp-launch run` needs to know about the machine it runs on, as one value. The
// option rules (launcher/run/run_options.hpp) take it as an argument instead of reading the
// environment, NVML or the routing table themselves, so they are tested with made-up hosts.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "launcher/workers/numa_binding.hpp"
#include "launcher/workers/worker_env.hpp"

namespace ddp::launcher {

struct HostFacts {
  EnvMap env;  // the supervisor's environment (PYTHON_EXEC, SLURM_*, DDP_*, ...)
  int cpu_count = 1;
  std::string hostname;
  std::filesystem::path temp_dir = "/tmp";
  int pid = 0;
  std::string random_id = "00000000";  // run id for --standalone without --rdzv-id
  // The Windows build: the rules refuse what it lacks (cgroups, NUMA binding, the c10d rendezvous,
  // Slurm; docs/windows.md) with an error naming the flag, instead of failing later.
  bool windows = false;
  // Lookups the rules call only when they apply (NVML takes a while to load, DNS may hang for
  // seconds); in tests each is a lambda returning a made-up answer:
  // NVML's device count (nullopt and why not when NVML is unavailable), for --nproc-per-node gpu/auto ...
  std::function<std::pair<std::optional<int>, std::string>()> count_gpus;
  // ... whether the host name resolves to loopback only (gloo would advertise it to other nodes) ...
  std::function<bool()> hostname_is_loopback;
  // the interface whose address reaches HOST:PORT (gloo's GLOO_SOCKET_IFNAME for several nodes) ...
  std::function<std::optional<std::string>(const std::string& host, std::uint16_t port)> interface_towards;
  // ... and the address of the Slurm node that hosts the store (DNS, else scontrol's NodeAddr).
  std::function<std::string(const std::string& node)> resolve_slurm_node;
  // ... and the NUMA nodes with the CPUs this process may use (/sys/devices/system/node), for --numa-binding.
  std::function<std::vector<NumaNode>()> numa_nodes;
};

// Shell: this process's environment, hardware and name (NVML is loaded, nothing is changed).
HostFacts gather_host_facts();
// The lookups of this platform (host_lookups_linux.cpp, host_lookups_windows.cpp), for gather_host_facts.
void add_host_lookups(HostFacts& facts);

// For checking options on a host other than the one that runs them (`ddp-launch sbatch`): node 0
// of an srun step of `nodes` nodes, one GPU, no lookups that could fail for the submit host.
HostFacts batch_node_facts(int nodes);

}  // namespace ddp::launcher
