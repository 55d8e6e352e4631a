#pragma once
// `ddp-launch report`, the pure part: metrics.csv (+ run.json) of a run → its summary, and the
// summaries of several runs → a loss-vs-step chart as SVG (one curve per run).
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddp::launcher {

struct RunSummary {
  std::string label;
  int world_size = 0;
  std::optional<double> steps;        // the last step of the charted metric
  std::optional<double> first_value;  // of the charted metric (mean over ranks at its first step)
  std::optional<double> last_value;
  std::optional<double> duration_s;     // run.json start → end, else first → last row
  std::optional<double> samples_per_s;  // all ranks together (sum of each rank's mean samples_per_s)
  int attempts = 1;
  // Rows of the charted metric (and of samples_per_s) left out because their step, value or time is
  // inf, -inf or nan (a diverging model): the chart is drawn around them, `report` says how many.
  int skipped_non_finite = 0;
  std::vector<std::pair<double, double>> curve;  // (step, mean over ranks), steps ascending
  // The same points against wall-clock time: (seconds since the run started, mean over ranks), where
  // a step's time is when its last rank reported it; the run starts at run.json's "started", else
  // at metrics.csv's first row.
  std::vector<std::pair<double, double>> time_curve;
};

enum class ChartX { Step, Time };

struct ChartOptions {
  ChartX x = ChartX::Step;  // report --x step|time
  bool log_y = false;       // report --log-y: decades on the y axis; every value must be positive
};

// csv: metrics.csv's text (header time,attempt,rank,step,name,value); run_info: run.json or null.
// For each (rank, step) the latest attempt's value counts: a resumed run does not draw twice.
// A row with a non-finite step, value or time is skipped and counted (skipped_non_finite).
// A malformed row is a ddp::UsageError naming the line.
RunSummary summarize_run(std::string_view csv, const nlohmann::json& run_info, std::string label,
                         std::string_view metric = "loss");

// One row per run: world size, steps, first/last value, duration, samples/s.
std::string format_summaries(const std::vector<RunSummary>& runs, std::string_view metric = "loss");

// A standalone SVG: axes with ticks, one <path class="curve"> per run that has a curve, a legend.
// With log_y, a value at or below zero is a ddp::UsageError naming the run, the step and --log-y.
std::string render_chart_svg(const std::vector<RunSummary>& runs, std::string_view metric = "loss",
                             const ChartOptions& options = {});

// Ticks for a log axis enclosing [lo, hi] (both > 0): powers of ten, with 2 and 5 × 10^k between
// them when the range spans fewer than three decades.
std::vector<double> log_ticks(double lo, double hi);

// Round tick positions enclosing [lo, hi] (the first at or below lo, the last at or above hi): 1, 2 or 5 × 10^k apart,
// about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target = 6);

}  // namespace ddp::launcher
