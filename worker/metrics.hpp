#pragma once
// Metric lines: how a worker reports numbers to the supervisor. One line on stdout,
//   @ddp-metric step=12 loss=0.5312 samples_per_s=812.4
// i.e. ddp::env::kMetricLinePrefix, then space-separated key=value pairs. Keys match
// [A-Za-z_][A-Za-z0-9_.]*; values are decimal numbers (integers print without a point, reals
// with up to 10 significant digits). The supervisor keeps them per rank in <run_dir>/metrics.csv.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ddp::worker {

using MetricValue = std::variant<std::int64_t, double>;
using Metric = std::pair<std::string, MetricValue>;

// True when `key` may appear in a metric line.
bool valid_metric_key(std::string_view key);

// The line without its newline. Throws std::invalid_argument on a key the format cannot carry;
// non-finite reals (NaN, inf) are left out of the line, since the format only carries decimals.
std::string format_metric_line(const std::vector<Metric>& metrics);

// Writes the line to stdout and flushes it (the supervisor reads it through a pipe).
void emit_metrics(const std::vector<Metric>& metrics);

}  // namespace ddp::worker
