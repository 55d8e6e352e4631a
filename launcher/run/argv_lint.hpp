#pragma once
// Checks of the worker's command line before launch. Pure.
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

// A literal rank in the worker's argv ("--rank 0", "--local_rank=1", or a "--world-size 2" that is
// not the job's) is the same for every rank: in a job of more than one rank they cannot all be that
// rank, and torch waits for the others until its timeout. Returns the warning with the placeholder
// fix, or nullopt. world_size 0: not known before the rendezvous (--nnodes MIN:MAX).
std::optional<std::string> literal_rank_warning(const std::vector<std::string>& command, int world_size,
                                                int nproc_per_node);

}  // namespace ddp::launcher
