// SupervisorConfig's pure members (the config is built by launcher/run/run_options.cpp, in the core).
#include "launcher/supervisor/supervisor_config.hpp"

#include <algorithm>
#include <filesystem>

#include "common/env_contract.hpp"
#include "common/json_bytes.hpp"
#include "launcher/supervisor/supervisor_machine.hpp"

namespace ddp::launcher {

const char* store_mode_name(StoreMode mode) {
  switch (mode) {
    case StoreMode::Agent: return "agent";
    case StoreMode::Rank0: return "rank0";
    case StoreMode::File: return "file";
  }
  return "?";
}

bool SupervisorConfig::writes_log_files() const {
  auto any = [](const std::vector<int>& masks) {
    return std::any_of(masks.begin(), masks.end(), [](int m) { return m != 0; });
  };
  // torchrun's rule: a stream gets a file when redirected or teed; the filtered logs are files too.
  return any(redirects) || any(tee) || duplicate_filters.any();
}

SupervisorPolicy supervisor_policy(const SupervisorConfig& config) {
  return SupervisorPolicy{.nproc = config.plan.nproc_per_node,
                          .max_restarts = config.max_restarts,
                          .shutdown_grace = config.shutdown_grace,
                          .restart_backoff = config.restart_backoff,
                          .max_backoff = std::chrono::milliseconds(10000),
                          .rendezvous_budget = config.dynamic.has_value(),
                          .exit_barrier = config.dynamic.has_value(),
                          .restart_on_hang = config.restart_on_hang,
                          .max_no_progress_restarts = config.max_no_progress_restarts,
                          .budget_mode = config.budget_mode,
                          .checkpoint_file = !config.checkpoint_file.empty(),
                          .checkpoint_at_start = std::nullopt};
}

WorkerEnvInput worker_env_input(const SupervisorConfig& config, const RankAssignment& ranks,
                                const std::string& master_addr, std::uint16_t master_port, int restart_count,
                                const std::string& error_file, const std::string& filestore) {
  WorkerEnvInput in;
  in.ranks = ranks;
  in.master_addr = master_addr;
  in.master_port = master_port;
  in.restart_count = restart_count;
  in.max_restarts = config.max_restarts;
  in.run_id = config.run_id;
  in.use_agent_store = config.store_mode == StoreMode::Agent;
  in.error_file = error_file;
  in.backend = config.backend;
  if (config.store_mode == StoreMode::File) in.filestore_path = filestore;
  in.base_env = config.base_env;
  in.virtual_local_rank = config.virtual_local_rank;
  // The error file is <run_dir>/attempt_N/<local_rank>/error.json: the dumps go beside the ranks' dirs.
  if (!error_file.empty()) {
    in.nccl_trace_prefix =
        (std::filesystem::path(error_file).parent_path().parent_path() / "nccl_trace_rank_").string();
  }
  return in;
}

std::optional<std::string> cuda_visible_devices(const SupervisorConfig& c) {
  auto it = c.base_env.find(std::string(env::kCudaVisibleDevices));
  return it == c.base_env.end() ? std::nullopt : std::optional<std::string>(it->second);
}

nlohmann::json describe_run(const SupervisorConfig& c, const std::vector<RankAssignment>& plan) {
  nlohmann::json j{
      {"run_id", bytes_to_json(c.run_id)}, {"world_size", plan.empty() ? 0 : plan.front().world_size},
      {"nnodes", c.plan.nnodes},           {"nproc_per_node", c.plan.nproc_per_node},
      {"node_rank", c.plan.node_rank},     {"command", bytes_to_json(c.worker_argv)}};  // bytes: json_bytes.hpp
  for (auto [key, name] : {std::pair{"global_batch", env::kGlobalBatch},
                           std::pair{"per_rank_batch", env::kPerRankBatch}, std::pair{"lr_scale", env::kLrScale}}) {
    auto it = c.base_env.find(std::string(name));
    if (it != c.base_env.end()) j[key] = bytes_to_json(it->second);
  }
  return j;
}

}  // namespace ddp::launcher
