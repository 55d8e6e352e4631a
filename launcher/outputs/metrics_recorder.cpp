#include "launcher/outputs/metrics_recorder.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "common/clock.hpp"
#include "common/env_contract.hpp"
#include "common/json_bytes.hpp"

namespace ddp::launcher {

std::vector<int> global_ranks(const std::vector<RankAssignment>& plan) {
  std::vector<int> ranks;
  for (const auto& r : plan) ranks.push_back(r.rank);
  return ranks;
}

MetricsRecorder::MetricsRecorder(FileWriter& files, std::filesystem::path run_dir, std::vector<MetricPattern> patterns,
                                 nlohmann::json run_info)
    : files_(files), run_dir_(std::move(run_dir)), extractor_(std::move(patterns)), run_info_(std::move(run_info)) {
  run_info_["started"] = now_seconds();
}

void MetricsRecorder::on_line(int attempt, int rank, std::string_view line) {
  // Cheap for ordinary lines: no metric prefix and no user pattern means no work.
  for (const auto& row : extractor_.on_line(attempt, rank, line)) {
    ++worker_rows_;
    if (on_worker_row) on_worker_row(row);
    record(row);
  }
}

void MetricsRecorder::record(const MetricRow& row) {
  if (finished_) return;
  if (!csv_) {
    // Truncated: a run directory reused from an earlier run starts a fresh file (as its attempt_N are wiped).
    auto path = csv_path();
    csv_ = files_.open(path, FileWriter::Mode::Truncate, [path](int error) {
      spdlog::warn("cannot write {}: {}; metrics are not recorded", path.string(), std::strerror(error));
    });
    files_.write(*csv_, std::string(kMetricsCsvHeader) + '\n', false);
  }
  ++rows_;
  if (!files_.write(*csv_, format_metric_row(now_seconds(), row) + '\n', true)) ++dropped_;
}

bool MetricsRecorder::finish(nlohmann::json outcome, bool temporary_run_dir) {
  if (finished_) return false;
  finished_ = true;
  if (dropped_)
    spdlog::warn("the disk was too slow for the metrics: {} rows dropped from {}", dropped_, csv_path().string());
  if (rows_ == 0) return false;
  run_info_["finished"] = now_seconds();
  run_info_.update(outcome);
  auto path = run_dir_ / "run.json";
  std::ofstream out(path);
  // argv and env are bytes_to_json's already; the outcome's texts (worker output among them) are
  // shown, not read back: a byte that is no UTF-8 there is written as U+FFFD rather than failing.
  out << run_info_.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out.close();  // a full disk fails the flush in close(), not the buffered <<
  if (!out) spdlog::warn("cannot write {}: {}", path.string(), std::strerror(errno));
  return !temporary_run_dir || worker_rows_ > 0;
}

}  // namespace ddp::launcher
