#include "worker/context.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "common/env_contract.hpp"
#include "common/error.hpp"

namespace ddp::worker {

namespace {

std::string trimmed(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::int64_t parse_int(std::string_view name, const std::string& raw, std::int64_t lo, std::int64_t hi) {
  std::string v = trimmed(raw);
  std::int64_t out = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size()) {
    throw UsageError(fmt::format("{}='{}' is not an integer; unset it or give a whole number", name, raw));
  }
  if (out < lo || out > hi) {
    throw UsageError(fmt::format("{}={} is out of range: it must be within {}..{}", name, out, lo, hi));
  }
  return out;
}

double parse_double(std::string_view name, const std::string& raw) {
  std::string v = trimmed(raw);
  char* end = nullptr;
  double out = v.empty() ? 0.0 : std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || !std::isfinite(out) || out <= 0.0) {
    throw UsageError(fmt::format("{}='{}' is not a positive number; unset it or give e.g. 1.0", name, raw));
  }
  return out;
}

template <typename T>
std::optional<T> int_var(const EnvLookup& env, std::string_view name, std::int64_t lo, std::int64_t hi) {
  auto raw = env(name);
  if (!raw) return std::nullopt;
  return static_cast<T>(parse_int(name, *raw, lo, hi));
}

}  // namespace

EnvLookup process_env() {
  return [](std::string_view name) -> std::optional<std::string> {
    const char* v = std::getenv(std::string(name).c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

std::int64_t BatchPolicy::resolve_per_rank_batch(int world_size, std::int64_t fallback) const {
  if (per_rank_batch) return *per_rank_batch;
  if (global_batch) {
    if (*global_batch % world_size != 0) {
      auto lower = *global_batch / world_size * world_size;
      throw UsageError(fmt::format(
          "{}={} does not split over {} ranks; use a multiple of the world size, e.g. {} or {}", env::kGlobalBatch,
          *global_batch, world_size, lower > 0 ? lower : world_size, lower + world_size));
    }
    return *global_batch / world_size;
  }
  return fallback;
}

double BatchPolicy::learning_rate(double base_lr, std::int64_t step) const {
  double target = base_lr * lr_scale;
  if (lr_warmup_steps <= 0 || step >= lr_warmup_steps) return target;
  double progress = static_cast<double>(step) / static_cast<double>(lr_warmup_steps);
  return base_lr + (target - base_lr) * progress;
}

void require_store(const WorkerContext& c) {
  if (c.world_size > 1 && c.master_port == 0) {
    throw UsageError(
        fmt::format("{}={} but {} is unset: start the workers with `ddp-launch run` (or torchrun), "
                    "or set {} and {} to a store's address",
                    env::kWorldSize, c.world_size, env::kMasterPort, env::kMasterAddr, env::kMasterPort));
  }
}

WorkerContext parse_worker_context(const EnvLookup& env) {
  constexpr std::int64_t kMaxRanks = 1 << 20;
  constexpr std::int64_t kMaxBatch = std::numeric_limits<std::int32_t>::max();
  WorkerContext c;
  c.world_size = int_var<int>(env, env::kWorldSize, 1, kMaxRanks).value_or(1);
  c.rank = int_var<int>(env, env::kRank, 0, kMaxRanks).value_or(0);
  if (c.rank >= c.world_size) {
    throw UsageError(fmt::format("{}={} is not below {}={}; the launcher sets both, check a manual override",
                                 env::kRank, c.rank, env::kWorldSize, c.world_size));
  }
  c.local_world_size = int_var<int>(env, env::kLocalWorldSize, 1, kMaxRanks).value_or(c.world_size);
  c.local_rank = int_var<int>(env, env::kLocalRank, 0, kMaxRanks).value_or(c.rank);
  if (c.local_rank >= c.local_world_size) {
    throw UsageError(fmt::format("{}={} is not below {}={}", env::kLocalRank, c.local_rank, env::kLocalWorldSize,
                                 c.local_world_size));
  }
  if (auto addr = env(env::kMasterAddr); addr && !trimmed(*addr).empty()) c.master_addr = trimmed(*addr);
  c.master_port = int_var<std::uint16_t>(env, env::kMasterPort, 1, 65535).value_or(0);
  require_store(c);
  c.restart_count = int_var<int>(env, env::kRestartCount, 0, 1 << 30).value_or(0);
  c.max_restarts = int_var<int>(env, env::kMaxRestarts, 0, 1 << 30).value_or(0);
  c.run_id = env(env::kRunId).value_or("");
  c.error_file = env(env::kErrorFile).value_or("");

  c.batch.global_batch = int_var<std::int64_t>(env, env::kGlobalBatch, 1, kMaxBatch);
  c.batch.per_rank_batch = int_var<std::int64_t>(env, env::kPerRankBatch, 1, kMaxBatch);
  if (auto s = env(env::kLrScale)) c.batch.lr_scale = parse_double(env::kLrScale, *s);
  c.batch.lr_warmup_steps = int_var<std::int64_t>(env, env::kLrWarmupSteps, 0, kMaxBatch).value_or(0);
  if (c.batch.global_batch && c.batch.per_rank_batch &&
      *c.batch.per_rank_batch * c.world_size != *c.batch.global_batch) {
    throw UsageError(fmt::format(
        "{}={} and {}={} disagree over {} ranks (global must be per-rank × world size); "
        "set only one of them",
        env::kGlobalBatch, *c.batch.global_batch, env::kPerRankBatch, *c.batch.per_rank_batch, c.world_size));
  }
  // An explicit global batch must split evenly; fail here, before any work, naming the fix.
  (void)c.batch.resolve_per_rank_batch(c.world_size, 1);
  return c;
}

}  // namespace ddp::worker
