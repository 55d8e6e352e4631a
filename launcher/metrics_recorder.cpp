#include "launcher/metrics_recorder.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/clock.hpp"
#include "common/env_contract.hpp"
#include "launcher/supervisor.hpp"

namespace ddp::launcher {

std::vector<int> global_ranks(const std::vector<RankAssignment>& plan) {
  std::vector<int> ranks;
  for (const auto& r : plan) ranks.push_back(r.rank);
  return ranks;
}

std::optional<std::string> cuda_visible_devices(const SupervisorConfig& c) {
  auto it = c.base_env.find(std::string(env::kCudaVisibleDevices));
  return it == c.base_env.end() ? std::nullopt : std::optional<std::string>(it->second);
}

nlohmann::json describe_run(const SupervisorConfig& c, const std::vector<RankAssignment>& plan) {
  nlohmann::json j{{"run_id", c.run_id},
                   {"world_size", plan.empty() ? 0 : plan.front().world_size},
                   {"nnodes", c.plan.nnodes},
                   {"nproc_per_node", c.plan.nproc_per_node},
                   {"node_rank", c.plan.node_rank},
                   {"command", c.worker_argv}};
  for (auto [key, name] : {std::pair{"global_batch", env::kGlobalBatch},
                           std::pair{"per_rank_batch", env::kPerRankBatch}, std::pair{"lr_scale", env::kLrScale}}) {
    auto it = c.base_env.find(std::string(name));
    if (it != c.base_env.end()) j[key] = it->second;
  }
  return j;
}

MetricsRecorder::MetricsRecorder(std::filesystem::path run_dir, std::vector<MetricPattern> patterns,
                                 nlohmann::json run_info)
    : run_dir_(std::move(run_dir)), extractor_(std::move(patterns)), run_info_(std::move(run_info)) {
  run_info_["started"] = now_seconds();
}

MetricsRecorder::~MetricsRecorder() { stop_writer(); }

void MetricsRecorder::on_line(int attempt, int rank, std::string_view line) {
  // Cheap for ordinary lines: no metric prefix and no user pattern means no work.
  for (const auto& row : extractor_.on_line(attempt, rank, line)) {
    ++worker_rows_;
    record(row);
  }
}

void MetricsRecorder::record(const MetricRow& row) {
  if (!thread_.joinable()) {
    if (done_) return;  // after finish()
    thread_ = std::thread([this] { loop(); });
  }
  ++rows_;
  std::string text = format_metric_row(now_seconds(), row) + '\n';
  {
    std::lock_guard lock(mu_);
    if (queued_bytes_ + text.size() > kMaxQueuedBytes) {
      ++dropped_;
      return;
    }
    queued_bytes_ += text.size();
    queue_.push_back(std::move(text));
  }
  cv_.notify_one();
}

void MetricsRecorder::loop() {
  std::error_code ec;
  std::filesystem::create_directories(run_dir_, ec);
  auto path = csv_path();
  // "w": a run directory reused from an earlier run starts a fresh file (as its attempt_N are wiped).
  FILE* file = std::fopen(path.c_str(), "w");
  if (!file) spdlog::warn("cannot write {}: {}; metrics are not recorded", path.string(), std::strerror(errno));
  if (file) std::fprintf(file, "%.*s\n", static_cast<int>(kMetricsCsvHeader.size()), kMetricsCsvHeader.data());
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
    if (queue_.empty() && done_) break;
    std::deque<std::string> batch;
    batch.swap(queue_);
    queued_bytes_ = 0;
    lock.unlock();
    if (file) {
      for (const auto& text : batch) std::fwrite(text.data(), 1, text.size(), file);
      std::fflush(file);
    }
    lock.lock();
  }
  if (file) std::fclose(file);
}

void MetricsRecorder::stop_writer() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

bool MetricsRecorder::finish(nlohmann::json outcome, bool temporary_run_dir) {
  stop_writer();
  if (dropped_)
    spdlog::warn("the disk was too slow for the metrics: {} rows dropped from {}", dropped_, csv_path().string());
  if (rows_ == 0) return false;
  run_info_["finished"] = now_seconds();
  run_info_.update(outcome);
  auto path = run_dir_ / "run.json";
  std::ofstream out(path);
  out << run_info_.dump(2) << '\n';
  if (!out) spdlog::warn("cannot write {}", path.string());
  return !temporary_run_dir || worker_rows_ > 0;
}

}  // namespace ddp::launcher
