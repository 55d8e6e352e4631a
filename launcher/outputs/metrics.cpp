#include "launcher/outputs/metrics.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "common/env_contract.hpp"
#include "common/error.hpp"

namespace ddp::launcher {

bool valid_metric_name(std::string_view name) {
  auto alpha = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (name.empty() || !alpha(name.front())) return false;
  for (char c : name) {
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '.') return false;
  }
  return true;
}

std::optional<double> parse_metric_number(std::string_view text) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::optional<std::vector<MetricValue>> parse_metric_line(std::string_view line) {
  if (line.substr(0, env::kMetricLinePrefix.size()) != env::kMetricLinePrefix) return std::nullopt;
  line.remove_prefix(env::kMetricLinePrefix.size());
  std::vector<MetricValue> out;
  while (!line.empty()) {
    auto space = line.find_first_of(" \t\r");
    auto token = line.substr(0, space);
    line = space == std::string_view::npos ? std::string_view{} : line.substr(space + 1);
    auto eq = token.find('=');
    if (eq == std::string_view::npos) continue;
    auto key = token.substr(0, eq);
    auto value = parse_metric_number(token.substr(eq + 1));
    if (valid_metric_name(key) && value) out.push_back({std::string(key), *value});
  }
  return out;
}

MetricPattern parse_metric_pattern(std::string_view spec) {
  auto eq = spec.find('=');
  if (eq == std::string_view::npos) {
    throw UsageError(fmt::format("--metric '{}': expected NAME=REGEX, e.g. --metric loss='Loss\\s+([0-9.]+)'", spec));
  }
  MetricPattern p;
  p.name = std::string(spec.substr(0, eq));
  p.pattern = std::string(spec.substr(eq + 1));
  if (!valid_metric_name(p.name)) {
    throw UsageError(
        fmt::format("--metric '{}': '{}' is not a metric name (letters, digits, _ and ., not "
                    "starting with a digit)",
                    spec, p.name));
  }
  if (p.pattern.empty()) throw UsageError(fmt::format("--metric '{}': the regular expression is empty", spec));
  p.re = UserRegex(p.pattern);
  if (!p.re.ok()) {
    throw UsageError(
        fmt::format("--metric {}: '{}' is not a valid regular expression ({}; RE2 syntax: no backreferences or "
                    "lookaround); the value is its first capture group, e.g. 'Loss\\s+([0-9.]+)'",
                    p.name, p.pattern, p.re.error()));
  }
  return p;
}

std::vector<MetricRow> MetricExtractor::on_line(int attempt, int rank, std::string_view line) {
  std::vector<MetricRow> rows;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  std::optional<double> line_step;
  if (auto values = parse_metric_line(line)) {
    for (const auto& v : *values) {
      if (v.name == "step") line_step = v.value;
    }
    std::optional<double> step = line_step;
    if (!step) step = static_cast<double>(++sdk_lines_[rank]);
    for (auto& v : *values) {
      if (v.name != "step") rows.push_back({attempt, rank, step, std::move(v.name), v.value, line_step.has_value()});
    }
  }
  if (patterns_.empty()) return rows;
  std::vector<MetricValue> matched;
  for (const auto& p : patterns_) {
    auto text = p.re.find(line);
    if (!text) continue;
    auto value = parse_metric_number(*text);
    if (!value) continue;
    if (p.name == "step") line_step = *value;
    matched.push_back({p.name, *value});
  }
  for (auto& v : matched) {
    auto count = ++counts_[{rank, v.name}];
    if (v.name == "step") continue;
    rows.push_back({attempt, rank, line_step ? line_step : static_cast<double>(count), std::move(v.name), v.value,
                    line_step.has_value()});
  }
  return rows;
}

std::string format_metric_row(double time, const MetricRow& row) {
  std::string step = row.step ? fmt::format("{}", *row.step) : std::string();
  return fmt::format("{:.3f},{},{},{},{},{}", time, row.attempt, row.rank, step, row.name, row.value);
}

}  // namespace ddp::launcher
