#include "launcher/workers/numa_binding.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "common/error.hpp"

namespace ddp::launcher {
namespace {

int cpu_number(const std::string& s, const std::string& what, const std::string& text) {
  std::size_t used = 0;
  int n = -1;
  try {
    n = std::stoi(s, &used);
  } catch (const std::exception&) {
  }
  if (n < 0 || used != s.size()) throw UsageError(fmt::format("{}: '{}' is not a CPU list (e.g. 0-3,8)", what, text));
  return n;
}

}  // namespace

std::vector<int> parse_cpu_list(const std::string& text, const std::string& what) {
  std::vector<int> out;
  std::string list = text;
  while (!list.empty() && (list.back() == '\n' || list.back() == ' ')) list.pop_back();
  std::size_t start = 0;
  while (start < list.size()) {
    auto comma = list.find(',', start);
    auto item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? list.size() : comma + 1;
    auto dash = item.find('-');
    int lo = cpu_number(item.substr(0, dash), what, text);
    int hi = dash == std::string::npos ? lo : cpu_number(item.substr(dash + 1), what, text);
    if (hi < lo) throw UsageError(fmt::format("{}: '{}' is not a CPU list (e.g. 0-3,8)", what, text));
    for (int c = lo; c <= hi; ++c) out.push_back(c);
  }
  return out;
}

std::vector<std::vector<int>> numa_cpu_sets(const std::string& mode, int nproc, const std::vector<NumaNode>& nodes) {
  if (mode != "node" && mode != "exclusive") {
    throw UsageError(
        fmt::format("--numa-binding {}: ddp-launch binds by 'node' (each rank to its NUMA node's CPUs) "
                    "or 'exclusive' (disjoint CPUs of that node); give one of them",
                    mode));
  }
  if (nodes.empty()) {
    throw UsageError(
        fmt::format("--numa-binding {}: this host shows no NUMA nodes (/sys/devices/system/node): drop "
                    "--numa-binding",
                    mode));
  }
  const int n = static_cast<int>(nodes.size());
  std::vector<int> node_of(static_cast<std::size_t>(nproc));
  std::vector<int> ranks_on(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < nproc; ++i) {
    node_of[static_cast<std::size_t>(i)] = static_cast<int>(static_cast<long>(i) * n / nproc);
    ranks_on[static_cast<std::size_t>(node_of[static_cast<std::size_t>(i)])]++;
  }
  std::vector<std::vector<int>> out(static_cast<std::size_t>(nproc));
  std::vector<int> seen(static_cast<std::size_t>(n), 0);
  for (int i = 0; i < nproc; ++i) {
    const int k = node_of[static_cast<std::size_t>(i)];
    const auto& cpus = nodes[static_cast<std::size_t>(k)].cpus;
    const int share = ranks_on[static_cast<std::size_t>(k)];
    if (cpus.empty() || (mode == "exclusive" && static_cast<int>(cpus.size()) < share)) {
      throw UsageError(
          fmt::format("--numa-binding {}: NUMA node {} has {} CPU(s) for {} rank(s): use --numa-binding "
                      "node, fewer ranks (--nproc-per-node), or drop --numa-binding",
                      mode, nodes[static_cast<std::size_t>(k)].id, cpus.size(), share));
    }
    if (mode == "node") {
      out[static_cast<std::size_t>(i)] = cpus;
      continue;
    }
    const int slot = seen[static_cast<std::size_t>(k)]++;
    const std::size_t per = cpus.size() / static_cast<std::size_t>(share);
    const std::size_t from = per * static_cast<std::size_t>(slot);
    const std::size_t to = slot == share - 1 ? cpus.size() : from + per;
    out[static_cast<std::size_t>(i)].assign(cpus.begin() + static_cast<long>(from),
                                            cpus.begin() + static_cast<long>(to));
  }
  return out;
}

}  // namespace ddp::launcher
