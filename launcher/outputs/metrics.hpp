#pragma once
// Metrics from worker output lines. Pure: whole lines in (already split by the log router),
// metric rows out; the recorder (metrics_recorder.hpp) writes them.
//
// Two sources:
//  - the SDK's line format, `@ddp-metric step=12 loss=0.5312 samples_per_s=812.4`
//    (env::kMetricLinePrefix; keys [A-Za-z_][A-Za-z0-9_.]*, decimal values);
//  - unchanged scripts, through user patterns `--metric loss='Loss\s+([0-9.]+)'` (the first
//    capture group, or the whole match, is the value; RE2 syntax, safe on lines of any length).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/user_regex.hpp"

namespace ddp::launcher {

struct MetricValue {
  std::string name;
  double value = 0;
};

// key=value pairs of an `@ddp-metric ` line, in order; nullopt when the line is not one. Pairs
// that are malformed (bad key, not a number) are skipped, the rest kept.
std::optional<std::vector<MetricValue>> parse_metric_line(std::string_view line);

bool valid_metric_name(std::string_view name);

// A number the whole of `text` spells (decimal, optional sign and exponent); nullopt otherwise.
std::optional<double> parse_metric_number(std::string_view text);

struct MetricPattern {
  std::string name;
  std::string pattern;
  UserRegex re{""};  // RE2: linear in the line's length, whatever the line (user_regex.hpp)
};

// "NAME=REGEX" (from --metric). A missing '=', a bad name or a regex that does not compile is a
// ddp::UsageError naming the flag value and what is wrong.
MetricPattern parse_metric_pattern(std::string_view spec);

// One row of metrics.csv: time,attempt,rank,step,name,value (time is added by the recorder).
struct MetricRow {
  int attempt = 0;
  int rank = 0;
  std::optional<double> step;  // empty for samples without a step (GPU samples)
  std::string name;
  double value = 0;
  bool step_given = false;  // the line said its step (an SDK `step` key, a `step` pattern), not counted
};

// Per-run state of the extraction: step counters per rank and metric.
//  - SDK lines: the line's `step` key is the step of its other values (and is not a row itself);
//    a line without one counts as the next step of that rank.
//  - pattern metrics: the step is the number of matches of that metric so far on that rank
//    (1, 2, ...), unless a `step` metric (pattern or SDK key) is on the same line.
class MetricExtractor {
 public:
  explicit MetricExtractor(std::vector<MetricPattern> patterns = {}) : patterns_(std::move(patterns)) {}

  std::vector<MetricRow> on_line(int attempt, int rank, std::string_view line);

 private:
  std::vector<MetricPattern> patterns_;
  std::map<std::pair<int, std::string>, std::int64_t> counts_;  // (rank, name) → matches so far
  std::map<int, std::int64_t> sdk_lines_;                       // rank → SDK lines without a step
};

// The CSV line (no newline) for a row: time,attempt,rank,step,name,value.
std::string format_metric_row(double time, const MetricRow& row);

inline constexpr std::string_view kMetricsCsvHeader = "time,attempt,rank,step,name,value";

}  // namespace ddp::launcher
