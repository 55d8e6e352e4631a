#include "launcher/supervisor/run_outputs.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <system_error>
#include <utility>

#include "launcher/workers/cgroup.hpp"

namespace ddp::launcher {

namespace {

std::string whose(const std::optional<LogOwner>& owner) {
  if (!owner) return "";
  return fmt::format("rank {}'s {} (attempt {}) ", owner->rank, owner->is_stderr ? "stderr" : "stdout", owner->attempt);
}

}  // namespace

std::string write_failure_warning(const FileWriter::Failure& f, const std::optional<LogOwner>& owner) {
  return fmt::format(
      "[ddp-launch] warning: cannot write {}{} ({}): it will lack what is not written; the ranks run on (free "
      "space there, or point --log-dir/--run-dir at another disk)\n",
      whose(owner), f.path.string(), std::strerror(f.error));
}

std::string output_loss_summary(const FileWriter::Loss& loss, const std::optional<LogOwner>& owner,
                                const std::vector<std::string>& last_stderr) {
  const auto& f = loss.failure;
  std::string out = loss.lost_bytes == 0 && loss.written_bytes == 0
                        ? fmt::format("[ddp-launch] warning: {}{} was not written ({})\n", whose(owner),
                                      f.path.string(), std::strerror(f.error))
                        : fmt::format("[ddp-launch] warning: {}{} is incomplete: {} of {} not written ({})\n",
                                      whose(owner), f.path.string(), format_memory_size(loss.lost_bytes),
                                      format_memory_size(loss.lost_bytes + loss.written_bytes), std::strerror(f.error));
  if (owner && owner->is_stderr && !last_stderr.empty()) {
    out += fmt::format("[ddp-launch]   rank {}'s last stderr lines (kept in memory):\n", owner->rank);
    for (const auto& line : last_stderr) out += fmt::format("[ddp-launch]     {}\n", line);
  }
  return out;
}

RunOutputs::RunOutputs(const RunOutputsConfig& config, nlohmann::json run_info)
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
