#pragma once
// BatchPolicy: `run --global-batch B` or `--per-rank-batch b` (+ `--lr-warmup-steps N`) and the
// job's world size → the batch each rank processes and the learning-rate scale. Pure.
//
// Adding ranks changes the effective batch. Either keep the global batch and split it
// (--global-batch: per rank = B / world, lr × 1), or keep each rank's batch and let the global one
// grow (--per-rank-batch: global = b × world, lr × world by the linear scaling rule, optionally
// ramped up over N warm-up steps).
#include <optional>
#include <string>

#include "launcher/workers/worker_env.hpp"

namespace ddp::launcher {

struct BatchPolicyInput {
  std::optional<long> global_batch;     // --global-batch
  std::optional<long> per_rank_batch;   // --per-rank-batch
  std::optional<long> lr_warmup_steps;  // --lr-warmup-steps
  int world_size = 1;                   // all nodes × nproc per node
  int nnodes = 1;                       // for the messages only
};

struct BatchPolicy {
  long global_batch = 0;
  long per_rank_batch = 0;
  double lr_scale = 1;
  long lr_warmup_steps = 0;
  bool scaled = false;  // --per-rank-batch: the global batch grows with the world size

  // "batch: global 256 = 2 ranks × 128; lr × 1. The script must read these ... (the variables or
  // the {per_rank_batch} {global_batch} {lr_scale} placeholders)"
  std::string summary() const;
  // DDP_GLOBAL_BATCH, DDP_PER_RANK_BATCH, DDP_LR_SCALE, DDP_LR_WARMUP_STEPS.
  EnvMap env() const;
};

// nullopt when no batch flag was given. A global batch the world size does not divide, both flags
// at once, a non-positive size or a warm-up without a batch flag is a ddp::UsageError naming the
// nearest valid sizes and the fix.
std::optional<BatchPolicy> plan_batch(const BatchPolicyInput& in);

}  // namespace ddp::launcher
