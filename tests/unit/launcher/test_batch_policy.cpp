#include <doctest/doctest.h>

#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "launcher/workers/batch_policy.hpp"

using namespace ddp::launcher;

namespace {
BatchPolicyInput input(int world, std::optional<long> global, std::optional<long> per_rank,
                       std::optional<long> warmup = std::nullopt, int nnodes = 1) {
  BatchPolicyInput in;
  in.world_size = world;
  in.nnodes = nnodes;
  in.global_batch = global;
  in.per_rank_batch = per_rank;
  in.lr_warmup_steps = warmup;
  return in;
}

std::string usage_error(const BatchPolicyInput& in) {
  try {
    plan_batch(in);
  } catch (const ddp::UsageError& e) {
    return e.what();
  }
  FAIL("expected a UsageError");
  return {};
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }
}  // namespace

TEST_CASE("no batch flag: no policy, the environment is left alone") {
  CHECK_FALSE(plan_batch(input(4, std::nullopt, std::nullopt)).has_value());
}

TEST_CASE("--global-batch is split across the ranks, lr unchanged") {
  auto p = plan_batch(input(2, 256, std::nullopt));
  REQUIRE(p);
  CHECK(p->global_batch == 256);
  CHECK(p->per_rank_batch == 128);
  CHECK(p->lr_scale == 1);
  CHECK(starts_with(p->summary(), "batch: global 256 = 2 ranks × 128; lr × 1. "));
  auto env = p->env();
  CHECK(env.at(std::string(ddp::env::kGlobalBatch)) == "256");
  CHECK(env.at(std::string(ddp::env::kPerRankBatch)) == "128");
  CHECK(env.at(std::string(ddp::env::kLrScale)) == "1");
  CHECK(env.at(std::string(ddp::env::kLrWarmupSteps)) == "0");
}

TEST_CASE("--per-rank-batch: the global batch grows, lr scales linearly, warm-up passed on") {
  auto p = plan_batch(input(4, std::nullopt, 32, 100));
  REQUIRE(p);
  CHECK(p->global_batch == 128);
  CHECK(p->per_rank_batch == 32);
  CHECK(p->lr_scale == 4);
  CHECK(p->lr_warmup_steps == 100);
  CHECK(starts_with(p->summary(),
                    "batch: 32 per rank × 4 ranks = global 128; lr × 4 (linear scaling rule), warmed up over 100 "
                    "steps. "));
  CHECK(p->env().at(std::string(ddp::env::kLrScale)) == "4");
  CHECK(p->env().at(std::string(ddp::env::kLrWarmupSteps)) == "100");
}

TEST_CASE("one rank: both policies agree") {
  auto g = plan_batch(input(1, 64, std::nullopt));
  auto r = plan_batch(input(1, std::nullopt, 64));
  CHECK(g->per_rank_batch == r->per_rank_batch);
  CHECK(g->lr_scale == r->lr_scale);
  CHECK(starts_with(g->summary(), "batch: global 64 = 1 rank × 64; lr × 1. "));
}

TEST_CASE("a global batch the world does not divide names the nearest valid sizes and the fix") {
  auto msg = usage_error(input(4, 250, std::nullopt));
  CHECK(msg.find("--global-batch 250") != std::string::npos);
  CHECK(msg.find("248 (62 per rank) or 252 (63 per rank)") != std::string::npos);
  CHECK(msg.find("--per-rank-batch 62") != std::string::npos);
}

TEST_CASE("the world size is the global one: nodes × ranks") {
  auto msg = usage_error(input(8, 100, std::nullopt, std::nullopt, 2));
  CHECK(msg.find("8 (2 nodes × 4 ranks)") != std::string::npos);
  CHECK(msg.find("96 (12 per rank) or 104 (13 per rank)") != std::string::npos);
  auto p = plan_batch(input(8, 256, std::nullopt, std::nullopt, 2));
  CHECK(p->per_rank_batch == 32);
}

TEST_CASE("a global batch smaller than the world offers the smallest valid one") {
  auto msg = usage_error(input(4, 3, std::nullopt));
  CHECK(msg.find("use 4 (1 per rank)") != std::string::npos);
}

TEST_CASE("bad combinations are usage errors") {
  CHECK(usage_error(input(2, 64, 32)).find("give one of them") != std::string::npos);
  CHECK(usage_error(input(2, 0, std::nullopt)).find("not a positive") != std::string::npos);
  CHECK(usage_error(input(2, std::nullopt, -1)).find("not a positive") != std::string::npos);
  CHECK(usage_error(input(2, std::nullopt, 8, -5)).find("negative") != std::string::npos);
  CHECK(usage_error(input(2, std::nullopt, std::nullopt, 10)).find("--per-rank-batch") != std::string::npos);
}

TEST_CASE("the batch line says the script must read the values, and how") {
  // An unchanged script trains at its own batch size: the announcement must not suggest otherwise.
  for (const auto& p : {plan_batch(input(2, 256, std::nullopt)), plan_batch(input(2, std::nullopt, 32))}) {
    REQUIRE(p);
    auto s = p->summary();
    CHECK(s.find("The script must read these for its batch to change") != std::string::npos);
    for (const char* what : {"$DDP_PER_RANK_BATCH", "$DDP_GLOBAL_BATCH", "$DDP_LR_SCALE", "{per_rank_batch}",
                             "{global_batch}", "{lr_scale}"}) {
      CHECK_MESSAGE(s.find(what) != std::string::npos, what);
    }
  }
}
