#include "launcher/supervisor/run_outputs.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <system_error>
#include <utility>

#include "launcher/supervisor/supervisor_config.hpp"

namespace ddp::launcher {

RunOutputs::RunOutputs(const SupervisorConfig& config, nlohmann::json run_info)
    : metrics(files, config.run_dir, config.metric_patterns, std::move(run_info)),
      filtered(files, config.run_dir, config.duplicate_filters),
      run_dir_(config.run_dir),
      remove_run_dir_(config.remove_run_dir) {}

void RunOutputs::begin_attempt(int attempt) {
  std::error_code ec;
  std::filesystem::remove_all(run_dir_ / fmt::format("attempt_{}", attempt), ec);
}

std::filesystem::path RunOutputs::rank_dir(int attempt, int local_rank) {
  auto dir = run_dir_ / fmt::format("attempt_{}", attempt) / std::to_string(local_rank);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::remove(dir / "error.json", ec);
  return dir;
}

void RunOutputs::flush() {
  if (!files.flush(std::chrono::seconds(10))) {
    spdlog::warn("the disk is slow: after 10 s, the logs under {} are still being written", run_dir_.string());
  }
}

void RunOutputs::finish(int exit_code, int attempts) {
  files.finish();
  filtered.finish();
  bool kept_metrics = metrics.finish({{"exit_code", exit_code}, {"attempts", attempts}}, remove_run_dir_);
  std::error_code ec;
  if (remove_run_dir_ && !kept_metrics && kept_.empty()) std::filesystem::remove_all(run_dir_, ec);
  for (const auto& what : kept_) console.write(stderr, fmt::format("[ddp-launch]: {} (kept)\n", what));
  if (kept_metrics) {
    console.write(stderr, fmt::format("[ddp-launch]: metrics in {} (chart: ddp-launch report {})\n",
                                      metrics.csv_path().string(), run_dir_.string()));
  }
}

}  // namespace ddp::launcher
