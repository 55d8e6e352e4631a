#include <doctest/doctest.h>

#include "launcher/workers/rank_plan.hpp"
#include "launcher/workers/worker_env.hpp"

using namespace ddp::launcher;

namespace {

WorkerEnvInput input(std::string backend, EnvMap base_env) {
  WorkerEnvInput in;
  in.ranks = plan_ranks({1, 0, 2, "default"})[1];
  in.backend = std::move(backend);
  in.base_env = std::move(base_env);
  in.nccl_trace_prefix = "/run/attempt_0/nccl_trace_rank_";
  return in;
}

}  // namespace

TEST_CASE("PYTHONFAULTHANDLER=1 for every worker, unless the user set it") {
  CHECK(make_worker_launch(input("gloo", {}), {"x"}).env.at("PYTHONFAULTHANDLER") == "1");
  CHECK(make_worker_launch(input("gloo", {{"PYTHONFAULTHANDLER", ""}}), {"x"}).env.at("PYTHONFAULTHANDLER") == "");
}

TEST_CASE("gloo: no flight-recorder variables") {
  auto env = make_worker_launch(input("gloo", {{"PATH", "/usr/bin"}}), {"x"}).env;
  CHECK_FALSE(env.count("TORCH_NCCL_TRACE_BUFFER_SIZE"));
  CHECK_FALSE(env.count("TORCH_NCCL_DUMP_ON_TIMEOUT"));
  CHECK_FALSE(env.count("TORCH_NCCL_DEBUG_INFO_TEMP_FILE"));
}

TEST_CASE("nccl: the flight recorder on, dumping into the attempt's directory") {
  auto env = make_worker_launch(input("nccl", {}), {"x"}).env;
  CHECK(env.at("TORCH_NCCL_TRACE_BUFFER_SIZE") == "2000");
  CHECK(env.at("TORCH_NCCL_DUMP_ON_TIMEOUT") == "1");
  CHECK(env.at("TORCH_NCCL_DEBUG_INFO_TEMP_FILE") == "/run/attempt_0/nccl_trace_rank_");
}

TEST_CASE("a gloo-configured run whose environment sets NCCL variables counts as NCCL; the user's values stand") {
  CHECK(uses_nccl("nccl", {}));
  CHECK(uses_nccl("gloo", {{"NCCL_DEBUG", "INFO"}}));
  CHECK(uses_nccl("gloo", {{"TORCH_NCCL_BLOCKING_WAIT", "1"}}));
  CHECK_FALSE(uses_nccl("gloo", {{"GLOO_SOCKET_IFNAME", "lo"}}));
  auto env = make_worker_launch(input("gloo", {{"NCCL_DEBUG", "INFO"}, {"TORCH_NCCL_TRACE_BUFFER_SIZE", "50"},
                                               {"TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/mine/t_"}}),
                                {"x"})
                 .env;
  CHECK(env.at("TORCH_NCCL_TRACE_BUFFER_SIZE") == "50");
  CHECK(env.at("TORCH_NCCL_DEBUG_INFO_TEMP_FILE") == "/mine/t_");
  CHECK(env.at("TORCH_NCCL_DUMP_ON_TIMEOUT") == "1");
}

TEST_CASE("no trace prefix (no run directory known): the dump file variable is left alone") {
  auto in = input("nccl", {});
  in.nccl_trace_prefix.clear();
  auto env = make_worker_launch(in, {"x"}).env;
  CHECK_FALSE(env.count("TORCH_NCCL_DEBUG_INFO_TEMP_FILE"));
  CHECK(env.at("TORCH_NCCL_TRACE_BUFFER_SIZE") == "2000");
}
