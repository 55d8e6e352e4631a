#include "launcher/worker_env.hpp"

#include <fmt/format.h>

#include <cctype>

#include "common/env_contract.hpp"
#include "common/error.hpp"

namespace ddp::launcher {

std::map<std::string, std::string> placeholder_values(const WorkerEnvInput& in) {
  auto port = std::to_string(in.master_port);
  return {
      {"rank", std::to_string(in.ranks.rank)},
      {"local_rank", std::to_string(in.ranks.local_rank)},
      {"world_size", std::to_string(in.ranks.world_size)},
      {"master_addr", in.master_addr},
      {"master_port", port},
      {"dist_url", fmt::format("tcp://{}:{}", in.master_addr, port)},
      {"backend", in.backend},
  };
}

std::string expand_placeholders(std::string_view arg, const std::map<std::string, std::string>& values) {
  std::string out;
  out.reserve(arg.size());
  for (std::size_t i = 0; i < arg.size(); ++i) {
    char c = arg[i];
    if ((c == '{' || c == '}') && i + 1 < arg.size() && arg[i + 1] == c) {
      out += c;
      ++i;
      continue;
    }
    if (c == '{') {
      auto close = arg.find('}', i + 1);
      auto name = close == std::string_view::npos ? std::string_view() : arg.substr(i + 1, close - i - 1);
      bool identifier = !name.empty();
      for (char n : name) identifier = identifier && (std::islower(static_cast<unsigned char>(n)) || n == '_');
      if (identifier) {
        auto it = values.find(std::string(name));
        if (it == values.end()) {
          std::string known;
          for (const auto& [k, v] : values) known += (known.empty() ? "{" : ", {") + k + "}";
          throw UsageError(fmt::format("unknown placeholder {{{}}} in worker argument '{}'; known: {} "
                                       "(write {{{{ and }}}} for literal braces)",
                                       name, arg, known));
        }
        out += it->second;
        i = close;
        continue;
      }
    }
    out += c;
  }
  return out;
}

std::optional<std::string> omp_threads_default(const EnvMap& base_env, int local_world_size) {
  if (local_world_size > 1 && !base_env.count(std::string(env::kOmpNumThreads))) return std::string("1");
  return std::nullopt;
}

WorkerLaunch make_worker_launch(const WorkerEnvInput& in, const std::vector<std::string>& argv_template) {
  WorkerLaunch out;
  out.env = in.base_env;
  auto set = [&](std::string_view name, std::string value) { out.env[std::string(name)] = std::move(value); };
  const auto& r = in.ranks;
  set(env::kRank, std::to_string(r.rank));
  set(env::kLocalRank, std::to_string(r.local_rank));
  set(env::kWorldSize, std::to_string(r.world_size));
  set(env::kLocalWorldSize, std::to_string(r.local_world_size));
  set(env::kGroupRank, std::to_string(r.group_rank));
  set(env::kGroupWorldSize, std::to_string(r.group_world_size));
  set(env::kRoleRank, std::to_string(r.role_rank));
  set(env::kRoleWorldSize, std::to_string(r.role_world_size));
  set(env::kRoleName, r.role);
  set(env::kMasterAddr, in.master_addr);
  set(env::kMasterPort, std::to_string(in.master_port));
  set(env::kRestartCount, std::to_string(in.restart_count));
  set(env::kMaxRestarts, std::to_string(in.max_restarts));
  set(env::kRunId, in.run_id);
  set(env::kUseAgentStore, in.use_agent_store ? "True" : "False");
  if (!in.error_file.empty()) set(env::kErrorFile, in.error_file);
  for (auto name : {env::kNcclAsyncErrorHandling, env::kTorchNcclAsyncErrorHandling}) {
    if (!in.base_env.count(std::string(name))) set(name, "1");
  }
  if (auto omp = omp_threads_default(in.base_env, r.local_world_size)) set(env::kOmpNumThreads, *omp);

  auto values = placeholder_values(in);
  out.argv.reserve(argv_template.size());
  for (const auto& arg : argv_template) out.argv.push_back(expand_placeholders(arg, values));
  return out;
}

}  // namespace ddp::launcher
