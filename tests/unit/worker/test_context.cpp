// WorkerContext: the env contract read through a fake lookup (no process environment, no libtorch).
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "worker/context.hpp"

using ddp::worker::BatchPolicy;
using ddp::worker::parse_worker_context;
namespace env = ddp::env;

namespace {
ddp::worker::EnvLookup lookup(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](std::string_view name) -> std::optional<std::string> {
    auto it = vars.find(std::string(name));
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string k(std::string_view name) { return std::string(name); }

std::map<std::string, std::string> launched(int rank, int world) {
  return {{k(env::kRank), std::to_string(rank)},
          {k(env::kWorldSize), std::to_string(world)},
          {k(env::kLocalRank), std::to_string(rank)},
          {k(env::kLocalWorldSize), std::to_string(world)},
          {k(env::kMasterAddr), "127.0.0.1"},
          {k(env::kMasterPort), "29511"},
          {k(env::kRestartCount), "0"},
          {k(env::kMaxRestarts), "3"},
          {k(env::kRunId), "job-7"},
          {k(env::kErrorFile), "/tmp/x/error.json"}};
}

std::string usage_error(const std::map<std::string, std::string>& vars) {
  try {
    parse_worker_context(lookup(vars));
  } catch (const ddp::UsageError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("no launcher: a single process, rank 0 of 1, no store") {
  auto c = parse_worker_context(lookup({}));
  CHECK(c.rank == 0);
  CHECK(c.world_size == 1);
  CHECK(c.local_rank == 0);
  CHECK(c.master_port == 0);
  CHECK(c.is_primary());
  CHECK_FALSE(c.distributed());
  CHECK_FALSE(c.restarted());
  CHECK(c.error_file.empty());
  CHECK(c.batch.resolve_per_rank_batch(1, 32) == 32);
}

TEST_CASE("the launcher's variables become values") {
  auto vars = launched(1, 2);
  vars[k(env::kRestartCount)] = "2";
  vars[k(env::kMasterAddr)] = " node0 ";
  auto c = parse_worker_context(lookup(vars));
  CHECK(c.rank == 1);
  CHECK(c.world_size == 2);
  CHECK(c.local_rank == 1);
  CHECK(c.local_world_size == 2);
  CHECK(c.master_addr == "node0");
  CHECK(c.master_port == 29511);
  CHECK(c.restart_count == 2);
  CHECK(c.restarted());
  CHECK(c.max_restarts == 3);
  CHECK(c.run_id == "job-7");
  CHECK(c.error_file == "/tmp/x/error.json");
  CHECK_FALSE(c.is_primary());
  CHECK(c.distributed());
}

TEST_CASE("bad values name the variable and the fix") {
  auto vars = launched(0, 2);
  vars[k(env::kRank)] = "one";
  auto msg = usage_error(vars);
  CHECK(msg.find("RANK='one' is not an integer") != std::string::npos);

  vars = launched(0, 2);
  vars[k(env::kRank)] = "2";
  CHECK(usage_error(vars).find("is not below WORLD_SIZE=2") != std::string::npos);

  vars = launched(0, 2);
  vars.erase(k(env::kMasterPort));
  CHECK(usage_error(vars).find("ddp-launch run") != std::string::npos);

  vars = launched(0, 2);
  vars[k(env::kMasterPort)] = "70000";
  CHECK(usage_error(vars).find("MASTER_PORT=70000 is out of range") != std::string::npos);

  vars = launched(0, 2);
  vars[k(env::kWorldSize)] = "0";
  CHECK(usage_error(vars).find("WORLD_SIZE=0 is out of range") != std::string::npos);

  vars = launched(0, 2);
  vars[k(env::kLrScale)] = "-1";
  CHECK(usage_error(vars).find("DDP_LR_SCALE='-1' is not a positive number") != std::string::npos);
}

TEST_CASE("batch policy: per-rank wins, else the global batch is split, else the program's default") {
  auto vars = launched(0, 4);
  vars[k(env::kGlobalBatch)] = "256";
  auto c = parse_worker_context(lookup(vars));
  CHECK(c.batch.global_batch == 256);
  CHECK(c.batch.resolve_per_rank_batch(c.world_size, 32) == 64);

  vars[k(env::kPerRankBatch)] = "64";
  vars[k(env::kLrScale)] = "1";
  c = parse_worker_context(lookup(vars));
  CHECK(c.batch.resolve_per_rank_batch(c.world_size, 32) == 64);

  vars.erase(k(env::kGlobalBatch));
  vars[k(env::kLrScale)] = "4";
  vars[k(env::kLrWarmupSteps)] = "10";
  c = parse_worker_context(lookup(vars));
  CHECK(c.batch.resolve_per_rank_batch(c.world_size, 32) == 64);
  CHECK(c.batch.lr_scale == doctest::Approx(4.0));
  CHECK(c.batch.lr_warmup_steps == 10);
}

TEST_CASE("batch policy: a global batch that does not split, or disagrees with the per-rank one") {
  auto vars = launched(0, 3);
  vars[k(env::kGlobalBatch)] = "100";
  auto msg = usage_error(vars);
  CHECK(msg.find("DDP_GLOBAL_BATCH=100 does not split over 3 ranks") != std::string::npos);
  CHECK(msg.find("99 or 102") != std::string::npos);

  vars[k(env::kGlobalBatch)] = "96";
  vars[k(env::kPerRankBatch)] = "16";
  CHECK(usage_error(vars).find("disagree") != std::string::npos);
}

TEST_CASE("learning rate: base × scale, ramped linearly over the warm-up") {
  BatchPolicy p;
  CHECK(p.learning_rate(0.1, 0) == doctest::Approx(0.1));
  p.lr_scale = 4;
  CHECK(p.learning_rate(0.1, 0) == doctest::Approx(0.4));
  p.lr_warmup_steps = 10;
  CHECK(p.learning_rate(0.1, 0) == doctest::Approx(0.1));
  CHECK(p.learning_rate(0.1, 5) == doctest::Approx(0.25));
  CHECK(p.learning_rate(0.1, 10) == doctest::Approx(0.4));
  CHECK(p.learning_rate(0.1, 1000) == doctest::Approx(0.4));
}
