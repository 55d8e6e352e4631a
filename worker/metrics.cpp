#include "worker/metrics.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "common/env_contract.hpp"

namespace ddp::worker {

namespace {
bool key_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool key_rest(char c) { return key_start(c) || (c >= '0' && c <= '9') || c == '.'; }
}  // namespace

bool valid_metric_key(std::string_view key) {
  if (key.empty() || !key_start(key.front())) return false;
  for (char c : key.substr(1)) {
    if (!key_rest(c)) return false;
  }
  return true;
}

std::string format_metric_line(const std::vector<Metric>& metrics) {
  std::string line(env::kMetricLinePrefix);
  bool first = true;
  for (const auto& [key, value] : metrics) {
    if (!valid_metric_key(key)) {
      throw std::invalid_argument(fmt::format(
          "metric key '{}' is not allowed: use letters, digits, '_' and '.', not starting with a digit", key));
    }
    std::string text;
    if (const auto* i = std::get_if<std::int64_t>(&value)) {
      text = fmt::format("{}", *i);
    } else {
      double d = std::get<double>(value);
      if (!std::isfinite(d)) continue;
      // %g never prints a bare exponent-less "inf" here (filtered above); "1e-05" is a decimal number.
      text = fmt::format("{:.10g}", d);
    }
    if (!first) line += ' ';
    first = false;
    line += key;
    line += '=';
    line += text;
  }
  return line;
}

void emit_metrics(const std::vector<Metric>& metrics) {
  std::string line = format_metric_line(metrics);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}

}  // namespace ddp::worker
