#include "launcher/workers/rank_plan.hpp"

#include <fmt/format.h>

#include "common/error.hpp"
#include "launcher/rendezvous/rendezvous_client_machine.hpp"

namespace ddp::launcher {

std::vector<RankAssignment> plan_ranks(const RankPlanInput& in) {
  if (in.nnodes < 1) throw UsageError(fmt::format("--nnodes must be at least 1 (got {})", in.nnodes));
  if (in.nproc_per_node < 1) {
    throw UsageError(fmt::format("--nproc-per-node must be at least 1 (got {})", in.nproc_per_node));
  }
  if (in.node_rank < 0 || in.node_rank >= in.nnodes) {
    throw UsageError(
        fmt::format("--node-rank {} is outside 0..{} for --nnodes {}", in.node_rank, in.nnodes - 1, in.nnodes));
  }
  // Homogeneous nodes: node n runs global ranks [n*nproc, (n+1)*nproc), so node 0 holds rank 0.
  std::vector<RankAssignment> out;
  out.reserve(static_cast<std::size_t>(in.nproc_per_node));
  const bool given = in.rank_base >= 0;
  if (given && (in.world_size < in.rank_base + in.nproc_per_node)) {
    throw UsageError(fmt::format("ranks {}..{} do not fit a world of {}", in.rank_base,
                                 in.rank_base + in.nproc_per_node - 1, in.world_size));
  }
  const int world = given ? in.world_size : in.nnodes * in.nproc_per_node;
  const int base = given ? in.rank_base : in.node_rank * in.nproc_per_node;
  for (int local = 0; local < in.nproc_per_node; ++local) {
    RankAssignment a;
    a.rank = base + local;
    a.local_rank = local;
    a.world_size = world;
    a.local_world_size = in.nproc_per_node;
    a.group_rank = in.node_rank;
    a.group_world_size = in.nnodes;
    a.role_rank = a.rank;
    a.role_world_size = world;
    a.role = in.role;
    out.push_back(a);
  }
  return out;
}

std::vector<RankAssignment> plan_for_round(const RankPlanInput& configured, const RoundAssignment& round) {
  RankPlanInput in = configured;
  in.nnodes = round.nnodes;
  in.node_rank = round.node_rank;
  in.rank_base = round.rank_base;
  in.world_size = round.world_size;
  return plan_ranks(in);
}

}  // namespace ddp::launcher
