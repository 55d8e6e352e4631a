#pragma once
// WorkerContext: what the launcher tells a worker through the environment (rank, world, store,
// restart attempt, error file, batch policy), as plain values. Pure: it reads through a lookup
// function, so it is unit-tested without a process environment and without libtorch.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::worker {

// Returns the value of an environment variable, or nullopt when it is unset.
using EnvLookup = std::function<std::optional<std::string>(std::string_view name)>;

// The process environment (getenv).
EnvLookup process_env();

// The batch policy of `ddp-launch run --global-batch B | --per-rank-batch b`. Unset variables
// stay empty; a program falls back to its own default batch (see per_rank_batch()).
struct BatchPolicy {
  std::optional<std::int64_t> global_batch;    // DDP_GLOBAL_BATCH
  std::optional<std::int64_t> per_rank_batch;  // DDP_PER_RANK_BATCH
  double lr_scale = 1.0;                       // DDP_LR_SCALE
  std::int64_t lr_warmup_steps = 0;            // DDP_LR_WARMUP_STEPS

  // The batch this rank processes per step: DDP_PER_RANK_BATCH when set, else DDP_GLOBAL_BATCH
  // divided by the world size, else `fallback` (the program's own per-rank default).
  // Throws ddp::UsageError when the global batch does not split evenly over `world_size`.
  std::int64_t resolve_per_rank_batch(int world_size, std::int64_t fallback) const;

  // Learning rate for `step` (0-based): base × lr_scale, ramped linearly from base to
  // base × lr_scale over the first lr_warmup_steps steps (Goyal et al.'s gradual warm-up).
  double learning_rate(double base_lr, std::int64_t step) const;
};

struct WorkerContext {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 0;  // 0: no store (a single process run by hand)
  int restart_count = 0;          // TORCHELASTIC_RESTART_COUNT: 0 on the first attempt
  int max_restarts = 0;
  std::string run_id;
  std::string error_file;  // TORCHELASTIC_ERROR_FILE, empty when not launched by a supervisor
  BatchPolicy batch;

  bool is_primary() const { return rank == 0; }
  bool distributed() const { return world_size > 1; }
  bool restarted() const { return restart_count > 0; }
};

// Reads the env contract. Unset RANK/WORLD_SIZE mean a single process (rank 0 of 1); unset
// LOCAL_RANK/LOCAL_WORLD_SIZE default to RANK/WORLD_SIZE. A multi-rank world without
// MASTER_PORT, a malformed number or an inconsistent rank throws ddp::UsageError naming the
// variable, its value and what to do.
WorkerContext parse_worker_context(const EnvLookup& env);

// Throws ddp::UsageError when a world of several ranks has no store to meet at (MASTER_PORT).
void require_store(const WorkerContext& ctx);

}  // namespace ddp::worker
