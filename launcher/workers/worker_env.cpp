#include "launcher/workers/worker_env.hpp"

#include <fmt/format.h>

#include <cctype>

#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "store/filestore.hpp"

namespace ddp::launcher {

std::map<std::string, std::string> placeholder_values(const WorkerEnvInput& in) {
  auto port = std::to_string(in.master_port);
  std::map<std::string, std::string> values{
      {"rank", std::to_string(in.ranks.rank)},
      {"local_rank", std::to_string(in.ranks.local_rank)},
      {"world_size", std::to_string(in.ranks.world_size)},
      {"master_addr", in.master_addr},
      {"master_port", port},
      {"dist_url", fmt::format("tcp://{}:{}", in.master_addr, port)},
      {"backend", in.backend},
  };
  if (!in.filestore_path.empty()) values["filestore_url"] = store::file_url_from_path(in.filestore_path);
  // The batch policy (run --global-batch/--per-rank-batch) reaches the worker through these
  // variables; the placeholders let a script that takes --batch-size on its command line use it.
  for (const auto& [name, var] : batch_placeholders()) {
    if (auto it = in.base_env.find(std::string(var)); it != in.base_env.end()) values[std::string(name)] = it->second;
  }
  return values;
}

const std::vector<std::pair<std::string_view, std::string_view>>& batch_placeholders() {
  static const std::vector<std::pair<std::string_view, std::string_view>> table{
      {"per_rank_batch", env::kPerRankBatch}, {"global_batch", env::kGlobalBatch}, {"lr_scale", env::kLrScale}};
  return table;
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
          for (const auto& [batch_name, var] : batch_placeholders()) {
            if (name != batch_name) continue;
            throw UsageError(
                fmt::format("placeholder {{{}}} in worker argument '{}' has no value: it is the batch "
                            "policy's (${}); give run --global-batch B or --per-rank-batch b",
                            name, arg, var));
          }
          std::string known;
          for (const auto& [k, v] : values) known += (known.empty() ? "{" : ", {") + k + "}";
          throw UsageError(
              fmt::format("unknown placeholder {{{}}} in worker argument '{}'; known: {} "
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

std::string visible_device_of(const EnvMap& base_env, int local_rank) {
  auto it = base_env.find(std::string(env::kCudaVisibleDevices));
  if (it == base_env.end()) return std::to_string(local_rank);
  std::size_t start = 0;
  for (int i = 0; start <= it->second.size(); ++i) {
    auto comma = it->second.find(',', start);
    auto item = it->second.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (i == local_rank) {
      item.erase(0, item.find_first_not_of(' '));
      item.erase(item.find_last_not_of(' ') + 1);
      return item;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return std::to_string(local_rank);
}

std::optional<std::string> omp_threads_default(const EnvMap& base_env, int local_world_size) {
  if (local_world_size > 1 && !base_env.count(std::string(env::kOmpNumThreads))) return std::string("1");
  return std::nullopt;
}

bool uses_nccl(std::string_view backend, const EnvMap& base_env) {
  if (backend == "nccl") return true;
  for (const auto& [name, value] : base_env) {
    if (name.starts_with("NCCL_") || name.starts_with("TORCH_NCCL_")) return true;
  }
  return false;
}

EnvMap hang_forensics_env(const WorkerEnvInput& in) {
  EnvMap out;
  auto set_unset = [&](std::string_view name, std::string value) {
    if (!in.base_env.count(std::string(name))) out[std::string(name)] = std::move(value);
  };
  set_unset(env::kPythonFaultHandler, "1");
  if (!uses_nccl(in.backend, in.base_env)) return out;
  set_unset(env::kTorchNcclTraceBufferSize, "2000");
  set_unset(env::kTorchNcclDumpOnTimeout, "1");
  if (!in.nccl_trace_prefix.empty()) set_unset(env::kTorchNcclDebugInfoTempFile, in.nccl_trace_prefix);
  return out;
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
  if (!in.filestore_path.empty()) set(env::kFileStorePath, in.filestore_path);
  if (!in.timer_file.empty()) set(env::kTimerFile, in.timer_file);
  if (!in.heartbeat_file.empty()) set(env::kHeartbeatFile, in.heartbeat_file);
  for (auto name : {env::kNcclAsyncErrorHandling, env::kTorchNcclAsyncErrorHandling}) {
    if (!in.base_env.count(std::string(name))) set(name, "1");
  }
  if (auto omp = omp_threads_default(in.base_env, r.local_world_size)) set(env::kOmpNumThreads, *omp);
  for (auto& [name, value] : hang_forensics_env(in)) set(name, std::move(value));
  if (in.virtual_local_rank) {
    set(env::kLocalRank, "0");
    set(env::kCudaVisibleDevices, visible_device_of(in.base_env, r.local_rank));
  }

  auto values = placeholder_values(in);
  out.argv.reserve(argv_template.size());
  for (const auto& arg : argv_template) out.argv.push_back(expand_placeholders(arg, values));
  return out;
}

namespace {

std::optional<int> parse_small_int(std::string_view text) {
  if (text.empty() || text.size() > 6) return std::nullopt;
  int n = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

std::vector<std::string_view> split_commas(std::string_view value) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    auto comma = value.find(',', start);
    out.push_back(value.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (comma == std::string_view::npos) return out;
    start = comma + 1;
  }
}

}  // namespace

std::vector<int> parse_std_streams(std::string_view value, int nproc, std::string_view flag) {
  auto bad = [&](std::string_view why) {
    return UsageError(
        fmt::format("{} '{}': {}; give a mask 0..3 (1 stdout, 2 stderr, 3 both) for every "
                    "local rank, or per local rank as i:v,i:v (e.g. 0:3,1:2)",
                    flag, value, why));
  };
  std::vector<int> masks(static_cast<std::size_t>(nproc), 0);
  if (value.find(':') == std::string_view::npos) {
    auto mask = parse_small_int(value);
    if (!mask || *mask > 3) throw bad("not a mask 0..3");
    masks.assign(masks.size(), *mask);
    return masks;
  }
  for (auto item : split_commas(value)) {
    auto colon = item.find(':');
    if (colon == std::string_view::npos) throw bad(fmt::format("'{}' is not i:v", item));
    auto rank = parse_small_int(item.substr(0, colon));
    auto mask = parse_small_int(item.substr(colon + 1));
    if (!rank) throw bad(fmt::format("'{}' is not a local rank", item.substr(0, colon)));
    if (*rank >= nproc) throw bad(fmt::format("local rank {} does not exist (0..{})", *rank, nproc - 1));
    if (!mask || *mask > 3) throw bad(fmt::format("'{}' is not a mask 0..3", item.substr(colon + 1)));
    masks[static_cast<std::size_t>(*rank)] = *mask;
  }
  return masks;
}

std::vector<bool> parse_local_ranks_filter(std::string_view value, int nproc) {
  if (value.empty()) return std::vector<bool>(static_cast<std::size_t>(nproc), true);
  std::vector<bool> shown(static_cast<std::size_t>(nproc), false);
  for (auto item : split_commas(value)) {
    auto rank = parse_small_int(item);
    if (!rank || *rank >= nproc) {
      throw UsageError(
          fmt::format("--local-ranks-filter '{}': '{}' is not a local rank 0..{}; give a comma "
                      "list such as 0,2",
                      value, item, nproc - 1));
    }
    shown[static_cast<std::size_t>(*rank)] = true;
  }
  return shown;
}

}  // namespace ddp::launcher
