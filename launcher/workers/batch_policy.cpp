#include "launcher/workers/batch_policy.hpp"

#include <fmt/format.h>

#include "common/env_contract.hpp"
#include "common/error.hpp"

namespace ddp::launcher {
namespace {

std::string ranks_phrase(const BatchPolicyInput& in) {
  if (in.nnodes > 1) {
    return fmt::format("{} ({} nodes × {} ranks)", in.world_size, in.nnodes, in.world_size / in.nnodes);
  }
  return fmt::format("{}", in.world_size);
}

std::string plural(long n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

}  // namespace

std::string BatchPolicy::summary() const {
  int world = static_cast<int>(global_batch / per_rank_batch);
  std::string out = scaled ? fmt::format("batch: {} per rank × {} = global {}; lr × {} (linear scaling rule)",
                                         per_rank_batch, plural(world, "rank"), global_batch, lr_scale)
                           : fmt::format("batch: global {} = {} × {}; lr × {}", global_batch, plural(world, "rank"),
                                         per_rank_batch, lr_scale);
  if (lr_warmup_steps > 0) out += fmt::format(", warmed up over {}", plural(lr_warmup_steps, "step"));
  // The launcher cannot change a script's batch size: say so, with the two ways a script reads it.
  out += fmt::format(
      ". The script must read these for its batch to change (an unchanged script trains at its own size): "
      "${} ${} ${}, or the argv placeholders {{per_rank_batch}} {{global_batch}} {{lr_scale}}",
      env::kPerRankBatch, env::kGlobalBatch, env::kLrScale);
  return out;
}

EnvMap BatchPolicy::env() const {
  return {{std::string(env::kGlobalBatch), std::to_string(global_batch)},
          {std::string(env::kPerRankBatch), std::to_string(per_rank_batch)},
          {std::string(env::kLrScale), fmt::format("{}", lr_scale)},
          {std::string(env::kLrWarmupSteps), std::to_string(lr_warmup_steps)}};
}

std::optional<BatchPolicy> plan_batch(const BatchPolicyInput& in) {
  if (in.world_size < 1) throw Error(fmt::format("world size {} is not positive", in.world_size));
  if (in.global_batch && in.per_rank_batch) {
    throw UsageError(
        "--global-batch and --per-rank-batch are two policies: keep the global batch (split across ranks) "
        "or keep each rank's batch (the global one grows with the world size) - give one of them");
  }
  if (in.lr_warmup_steps && *in.lr_warmup_steps < 0) {
    throw UsageError(fmt::format("--lr-warmup-steps {} is negative: give 0 or more steps", *in.lr_warmup_steps));
  }
  if (!in.global_batch && !in.per_rank_batch) {
    if (in.lr_warmup_steps) {
      throw UsageError("--lr-warmup-steps needs a batch policy: add --per-rank-batch b (or --global-batch B)");
    }
    return std::nullopt;
  }
  BatchPolicy p;
  p.lr_warmup_steps = in.lr_warmup_steps.value_or(0);
  const long world = in.world_size;
  if (in.per_rank_batch) {
    if (*in.per_rank_batch < 1) {
      throw UsageError(fmt::format("--per-rank-batch {} is not a positive batch size", *in.per_rank_batch));
    }
    p.scaled = true;
    p.per_rank_batch = *in.per_rank_batch;
    p.global_batch = p.per_rank_batch * world;
    p.lr_scale = static_cast<double>(world);
    return p;
  }
  const long b = *in.global_batch;
  if (b < 1) throw UsageError(fmt::format("--global-batch {} is not a positive batch size", b));
  if (b % world != 0) {
    long below = b / world * world;
    long above = below + world;
    std::string nearest =
        below > 0 ? fmt::format("{} ({} per rank) or {} ({} per rank)", below, below / world, above, above / world)
                  : fmt::format("{} (1 per rank)", above);
    throw UsageError(fmt::format(
        "--global-batch {} cannot be split evenly across a world size of {}: use {}, or keep each rank's batch "
        "with --per-rank-batch {} (the global batch then grows with the world size)",
        b, ranks_phrase(in), nearest, std::max(1L, b / world)));
  }
  p.global_batch = b;
  p.per_rank_batch = b / world;
  p.lr_scale = 1;
  return p;
}

}  // namespace ddp::launcher
