#pragma once
// WorkerEnv: a rank's assignment + the launch options → its environment and argv. Pure.
// The variables are torchrun's (so unchanged scripts run), spelled in common/env_contract.hpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/rank_plan.hpp"

namespace ddp::launcher {

using EnvMap = std::map<std::string, std::string>;

struct WorkerEnvInput {
  RankAssignment ranks;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 0;
  int restart_count = 0;
  int max_restarts = 0;
  std::string run_id = "none";
  bool use_agent_store = true;  // TORCHELASTIC_USE_AGENT_STORE=True: workers are plain store clients
  std::string error_file;       // TORCHELASTIC_ERROR_FILE for this rank and attempt
  std::string backend = "gloo"; // for the {backend} placeholder
  EnvMap base_env;              // the supervisor's own environment, inherited
};

struct WorkerLaunch {
  EnvMap env;
  std::vector<std::string> argv;
};

// Values for the argv placeholders {rank} {local_rank} {world_size} {master_addr} {master_port}
// {dist_url} {backend}; "{{" and "}}" stand for literal braces.
std::map<std::string, std::string> placeholder_values(const WorkerEnvInput& in);

// Expands placeholders in one argument. An unknown {name} is a ddp::UsageError listing the known ones.
std::string expand_placeholders(std::string_view arg, const std::map<std::string, std::string>& values);

WorkerLaunch make_worker_launch(const WorkerEnvInput& in, const std::vector<std::string>& argv_template);

// torchrun's rule: OMP_NUM_THREADS=1 when the user left it unset and more than one rank shares
// the node. Returns the value to set, or nullopt to leave the environment alone.
std::optional<std::string> omp_threads_default(const EnvMap& base_env, int local_world_size);

}  // namespace ddp::launcher
