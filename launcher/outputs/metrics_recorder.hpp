#pragma once
// MetricsRecorder: the shell around MetricExtractor. The log router hands it every whole line;
// rows go to <run_dir>/metrics.csv through the supervisor's FileWriter (launcher/outputs/file_writer.hpp),
// so a slow disk never stalls the event loop (and, through full pipes, the workers). Rows beyond
// its bound are counted and reported, not waited for.
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "launcher/outputs/file_writer.hpp"
#include "launcher/outputs/metrics.hpp"
#include "launcher/workers/rank_plan.hpp"

namespace ddp::launcher {

std::vector<int> global_ranks(const std::vector<RankAssignment>& plan);

class MetricsRecorder {
 public:
  // run_info: what `ddp-launch report` needs besides the rows (world size, batch policy...);
  // written with the end time and exit code to <run_dir>/run.json when the run recorded metrics.
  MetricsRecorder(FileWriter& files, std::filesystem::path run_dir, std::vector<MetricPattern> patterns,
                  nlohmann::json run_info);
  MetricsRecorder(const MetricsRecorder&) = delete;
  MetricsRecorder& operator=(const MetricsRecorder&) = delete;

  // A worker's output line (its metrics keep a temporary run directory, see finish).
  void on_line(int attempt, int rank, std::string_view line);
  // A sample the supervisor took itself (GPU watch).
  void record(const MetricRow& row);
  // Called with every row of a worker's line as it is read (the straggler watch); may be empty.
  std::function<void(const MetricRow&)> on_worker_row;

  std::filesystem::path csv_path() const { return run_dir_ / "metrics.csv"; }

  // After the FileWriter finished: writes run.json when anything was recorded; returns whether the run
  // directory must be kept: anything recorded in a directory the user named, or worker metrics in
  // a temporary one (the supervisor's own GPU samples alone do not keep a temporary directory).
  bool finish(nlohmann::json outcome, bool temporary_run_dir);

 private:
  FileWriter& files_;
  std::optional<FileWriter::FileId> csv_;  // opened with the first row
  std::filesystem::path run_dir_;
  MetricExtractor extractor_;
  nlohmann::json run_info_;
  std::size_t rows_ = 0;
  std::size_t worker_rows_ = 0;
  std::size_t dropped_ = 0;
  bool finished_ = false;
};

}  // namespace ddp::launcher
