#pragma once
// --numa-binding (torch 2.x): each local rank runs on the CPUs of one NUMA node, set with
// sched_setaffinity between fork and exec. Pure: the node layout in, CPU sets out.
#include <string>
#include <vector>

namespace ddp::launcher {

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;
};

// "0-3,8,10-11" (the kernel's cpulist format) → {0,1,2,3,8,10,11}; a UsageError naming `what` when
// malformed.
std::vector<int> parse_cpu_list(const std::string& text, const std::string& what);

// One CPU set per local rank. Ranks are spread over the nodes in order (local rank i → node
// i·N/nproc). "node": the whole node's CPUs; "exclusive": the node's CPUs split between the ranks
// on it, disjoint. Other modes, no NUMA information, or a node without CPUs: a UsageError that
// says what to do.
std::vector<std::vector<int>> numa_cpu_sets(const std::string& mode, int nproc, const std::vector<NumaNode>& nodes);

}  // namespace ddp::launcher
