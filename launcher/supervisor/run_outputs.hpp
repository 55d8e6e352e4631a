#pragma once
// RunOutputs: what a run writes besides its events: the console, and under run_dir the per-rank
// and filtered log files and metrics.csv, all files behind the one writer thread
// (launcher/outputs/file_writer.hpp). The log router (launcher/outputs/log_router.hpp) feeds them; the supervisor
// flushes them before a failure summary and finishes them when the job is over.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "launcher/outputs/file_writer.hpp"
#include "launcher/outputs/filtered_log_writer.hpp"
#include "launcher/outputs/log_router.hpp"
#include "launcher/outputs/metrics_recorder.hpp"

namespace ddp::launcher {

// Whose log a file is (a rank's stdout.log or stderr.log): for what is said when it cannot be written.
struct LogOwner {
  int attempt = 0;
  int rank = 0;  // global
  int local_rank = 0;
  bool is_stderr = false;
};

// Said at once when a file of the run cannot be written (FileWriter's first failure of it): one line.
std::string write_failure_warning(const FileWriter::Failure& f, const std::optional<LogOwner>& owner);
// The end of the run: one line per file that lacks bytes; for a cut stderr.log, the rank's last
// stderr lines kept in memory (`last_stderr`), which its file may not have.
std::string output_loss_summary(const FileWriter::Loss& loss, const std::optional<LogOwner>& owner,
                                const std::vector<std::string>& last_stderr);

// What the outputs need of the run's config (supervisor_run.hpp's run_outputs_config).
struct RunOutputsConfig {
  std::filesystem::path run_dir;
  bool remove_run_dir = false;                 // a temporary run_dir: it goes at the end unless it keeps something
  std::vector<MetricPattern> metric_patterns;  // --metric
  DuplicateFilters duplicate_filters;          // --duplicate-stdout/stderr-filters
};

struct RunOutputs {
  // run_info: describe_run's (supervisor_config.hpp).
  RunOutputs(const RunOutputsConfig& config, nlohmann::json run_info);

  // run_dir/attempt_N/<local_rank>/{error.json,stdout.log,stderr.log}, torchrun's layout. A new
  // attempt's directory starts empty: torchrun wipes one a previous run left, so no stale rank's
  // logs mix in.
  void begin_attempt(int attempt);
  // A rank's directory, created, without an error.json of before (the worker writes its own there).
  std::filesystem::path rank_dir(int attempt, int local_rank);
  // What the workers printed is in their log files before the summary quotes it, and before the
  // `finished` event a reader may act on. Warns when the disk is slow (after 10 s).
  void flush();
  // The job is over: everything queued is written (the reports count what was not). A temporary
  // run_dir goes unless it keeps metrics, and then the console says where they are.
  void finish(int exit_code, int attempts);
  // Evidence the user must be able to read after the job (a hang's stacks): a temporary run_dir
  // stays, and finish() says so, naming `what`.
  void keep(std::string what) { kept_.push_back(std::move(what)); }

  Console console;
  FileWriter files;  // per-rank logs, filtered logs, metrics.csv
  MetricsRecorder metrics;
  FilteredLogWriter filtered;

 private:
  std::filesystem::path run_dir_;
  bool remove_run_dir_;
  std::vector<std::string> kept_;
};

}  // namespace ddp::launcher
