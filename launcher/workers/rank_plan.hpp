#pragma once
// RankPlan: nodes × processes per node → the ranks this node runs. Pure; rank 0 always exists.
#include <string>
#include <vector>

namespace ddp::launcher {

struct RoundAssignment;  // launcher/rendezvous/rendezvous_client_machine.hpp

struct RankAssignment {
  int rank = 0;        // global rank, 0..world_size-1
  int local_rank = 0;  // rank on this node
  int world_size = 1;
  int local_world_size = 1;
  int group_rank = 0;        // node rank
  int group_world_size = 1;  // number of nodes
  int role_rank = 0;
  int role_world_size = 1;
  std::string role = "default";
};

struct RankPlanInput {
  int nnodes = 1;
  int node_rank = 0;
  int nproc_per_node = 1;
  std::string role = "default";
  // Nodes of different sizes (dynamic rendezvous): this node's first global rank and the world
  // size, as the round decided them. -1/0: homogeneous, node_rank * nproc_per_node.
  int rank_base = -1;
  int world_size = 0;
};

// Throws ddp::UsageError naming the bad value and the valid range.
std::vector<RankAssignment> plan_ranks(const RankPlanInput& in);

// Dynamic rendezvous: this node's ranks in a round. Node rank, node count, first rank and world
// size are the round's; the processes per node and the role stay the configured ones.
std::vector<RankAssignment> plan_for_round(const RankPlanInput& configured, const RoundAssignment& round);

}  // namespace ddp::launcher
