// --numa-binding's CPU sets (launcher/workers/numa_binding.hpp).
#include <doctest/doctest.h>

#include <string>

#include "common/error.hpp"
#include "launcher/workers/numa_binding.hpp"

using namespace ddp::launcher;
using Cpus = std::vector<int>;

namespace {

std::vector<NumaNode> two_nodes() { return {{0, {0, 1, 2, 3}}, {1, {4, 5, 6, 7}}}; }

std::string usage_error(const std::string& mode, int nproc, const std::vector<NumaNode>& nodes) {
  try {
    numa_cpu_sets(mode, nproc, nodes);
  } catch (const ddp::UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("cpulist: ranges and single CPUs, the kernel's format") {
  CHECK(parse_cpu_list("0-3,8,10-11\n", "x") == Cpus{0, 1, 2, 3, 8, 10, 11});
  CHECK(parse_cpu_list("5", "x") == Cpus{5});
  CHECK(parse_cpu_list("", "x").empty());
  CHECK_THROWS_AS(parse_cpu_list("3-1", "x"), ddp::UsageError);
  CHECK_THROWS_AS(parse_cpu_list("a-b", "x"), ddp::UsageError);
}

TEST_CASE("node: the ranks spread over the NUMA nodes in order, each on its whole node") {
  auto sets = numa_cpu_sets("node", 4, two_nodes());
  CHECK(sets == std::vector<Cpus>{{0, 1, 2, 3}, {0, 1, 2, 3}, {4, 5, 6, 7}, {4, 5, 6, 7}});
  CHECK(numa_cpu_sets("node", 1, two_nodes()) == std::vector<Cpus>{{0, 1, 2, 3}});
  CHECK(numa_cpu_sets("node", 2, {{0, {0, 1}}}) == std::vector<Cpus>{{0, 1}, {0, 1}});
}

TEST_CASE("exclusive: disjoint CPUs of the node, the last rank takes the remainder") {
  auto sets = numa_cpu_sets("exclusive", 4, two_nodes());
  CHECK(sets == std::vector<Cpus>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
  CHECK(numa_cpu_sets("exclusive", 2, {{0, {0, 1, 2}}}) == std::vector<Cpus>{{0}, {1, 2}});
  CHECK(usage_error("exclusive", 3, {{0, {0, 1}}}).find("NUMA node 0 has 2 CPU(s) for 3 rank(s)") != std::string::npos);
}

TEST_CASE("a mode ddp-launch does not implement, no NUMA information, a node without usable CPUs: refused") {
  CHECK(usage_error("socket", 2, two_nodes()).find("'node'") != std::string::npos);
  CHECK(usage_error("node", 2, {}).find("no NUMA nodes") != std::string::npos);
  CHECK(usage_error("node", 2, {{0, {}}, {1, {1}}}).find("NUMA node 0 has 0 CPU(s)") != std::string::npos);
}
