#include "launcher/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/error.hpp"
#include "launcher/metrics.hpp"

namespace ddp::launcher {
namespace {

std::vector<std::string_view> split(std::string_view line, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    auto pos = line.find(sep);
    out.push_back(line.substr(0, pos));
    if (pos == std::string_view::npos) return out;
    line.remove_prefix(pos + 1);
  }
}

std::string xml_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string tick_label(double v, double step) {
  if (v == 0) return "0";
  int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  if (std::abs(v) >= 1e6 || std::abs(v) < 1e-4) return fmt::format("{:.2g}", v);
  return fmt::format("{:.{}f}", v, std::clamp(decimals, 0, 6));
}

std::string opt(const std::optional<double>& v, const char* format = "{:.4g}") {
  return v ? fmt::format(fmt::runtime(format), *v) : "-";
}

}  // namespace

RunSummary summarize_run(std::string_view csv, const nlohmann::json& run_info, std::string label,
                         std::string_view metric) {
  RunSummary r;
  r.label = std::move(label);
  std::map<std::pair<double, int>, std::pair<int, double>> latest;  // (step, rank) → (attempt, value)
  std::map<std::pair<int, int>, std::vector<double>> throughput;    // (rank, attempt) → samples_per_s
  std::set<int> ranks;
  double t_first = std::numeric_limits<double>::infinity(), t_last = -t_first;
  int max_attempt = 0;
  std::size_t lineno = 0;
  while (!csv.empty()) {
    auto nl = csv.find('\n');
    auto line = csv.substr(0, nl);
    csv = nl == std::string_view::npos ? std::string_view{} : csv.substr(nl + 1);
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (lineno == 1 && line == kMetricsCsvHeader)) continue;
    auto f = split(line, ',');
    auto time = f.size() == 6 ? parse_metric_number(f[0]) : std::nullopt;
    auto attempt = f.size() == 6 ? parse_metric_number(f[1]) : std::nullopt;
    auto rank = f.size() == 6 ? parse_metric_number(f[2]) : std::nullopt;
    auto step = f.size() == 6 && !f[3].empty() ? parse_metric_number(f[3]) : std::nullopt;
    auto value = f.size() == 6 ? parse_metric_number(f[5]) : std::nullopt;
    if (!time || !attempt || !rank || !value || (f.size() == 6 && !f[3].empty() && !step)) {
      throw UsageError(
          fmt::format("{}: line {} is not time,attempt,rank,step,name,value: '{}'", r.label, lineno, line));
    }
    t_first = std::min(t_first, *time);
    t_last = std::max(t_last, *time);
    int a = static_cast<int>(*attempt), k = static_cast<int>(*rank);
    max_attempt = std::max(max_attempt, a);
    if (f[4] == metric && step) {
      ranks.insert(k);
      auto& slot = latest[{*step, k}];
      if (a >= slot.first) slot = {a, *value};
    } else if (f[4] == "samples_per_s") {
      ranks.insert(k);
      throughput[{k, a}].push_back(*value);
    }
  }
  std::map<double, std::pair<double, int>> by_step;  // step → (sum, count)
  for (const auto& [key, v] : latest) {
    auto& s = by_step[key.first];
    s.first += v.second;
    s.second += 1;
  }
  for (const auto& [step, s] : by_step) r.curve.emplace_back(step, s.first / s.second);
  if (!r.curve.empty()) {
    r.steps = r.curve.back().first;
    r.first_value = r.curve.front().second;
    r.last_value = r.curve.back().second;
  }
  // Each rank's throughput: the mean of its latest attempt, without the first (warm-up) report.
  std::map<int, std::pair<int, double>> per_rank;  // rank → (attempt, mean)
  for (const auto& [key, values] : throughput) {
    auto first = values.size() > 1 ? values.begin() + 1 : values.begin();
    double mean = 0;
    for (auto it = first; it != values.end(); ++it) mean += *it;
    mean /= static_cast<double>(values.end() - first);
    auto& slot = per_rank[key.first];
    if (key.second >= slot.first) slot = {key.second, mean};
  }
  if (!per_rank.empty()) {
    r.samples_per_s = 0;
    for (const auto& [rank, v] : per_rank) *r.samples_per_s += v.second;
  }
  r.world_size = static_cast<int>(ranks.size());
  r.attempts = max_attempt + 1;
  if (run_info.is_object()) {
    r.world_size = run_info.value("world_size", r.world_size);
    r.attempts = run_info.value("attempts", r.attempts);
    if (run_info.contains("started") && run_info.contains("finished")) {
      r.duration_s = run_info["finished"].get<double>() - run_info["started"].get<double>();
    }
  }
  if (!r.duration_s && t_last >= t_first) r.duration_s = t_last - t_first;
  return r;
}

std::string format_summaries(const std::vector<RunSummary>& runs, std::string_view metric) {
  std::size_t width = 3;
  for (const auto& r : runs) width = std::max(width, r.label.size());
  std::string first = fmt::format("first {}", metric), last = fmt::format("last {}", metric);
  std::string out = fmt::format("{:<{}}  {:>5}  {:>8}  {:>10}  {:>10}  {:>10}  {:>10}  {:>8}\n", "run", width, "world",
                                "steps", first, last, "duration s", "samples/s", "attempts");
  for (const auto& r : runs) {
    out += fmt::format("{:<{}}  {:>5}  {:>8}  {:>10}  {:>10}  {:>10}  {:>10}  {:>8}\n", r.label, width, r.world_size,
                       opt(r.steps, "{:g}"), opt(r.first_value), opt(r.last_value), opt(r.duration_s, "{:.1f}"),
                       opt(r.samples_per_s, "{:.1f}"), r.attempts);
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) {
    double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  double raw = (hi - lo) / std::max(1, target);
  double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  double end = std::ceil(hi / step - 1e-9) * step;
  for (double v = std::floor(lo / step + 1e-9) * step; v <= end + step * 1e-9; v += step) {
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  }
  return ticks;
}

std::string render_chart_svg(const std::vector<RunSummary>& runs, std::string_view metric) {
  constexpr double W = 800, H = 480, left = 70, right = 20, top = 40, bottom = 60;
  static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                 "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& r : runs) {
    for (auto [x, y] : r.curve) {
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (!(x1 >= x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  auto xt = nice_ticks(x0, x1), yt = nice_ticks(y0, y1);
  x0 = std::min(x0, xt.front()), x1 = std::max(x1, xt.back());
  y0 = std::min(y0, yt.front()), y1 = std::max(y1, yt.back());
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (W - left - right); };
  auto py = [&](double y) { return H - bottom - (y - y0) / (y1 - y0) * (H - top - bottom); };
  std::string s = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{3} vs step</text>\n",
      W, H, (left + W - right) / 2, xml_escape(metric));
  s += "<g class=\"grid\" stroke=\"#e0e0e0\">\n";
  for (double v : xt)
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", px(v), top, H - bottom);
  for (double v : yt)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>\n", left, py(v), W - right);
  s += "</g>\n<g class=\"axes\" stroke=\"black\">\n";
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", left, H - bottom, W - right);
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", left, top, H - bottom);
  for (double v : xt)
    s +=
        fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", px(v), H - bottom, H - bottom + 5);
  for (double v : yt)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>\n", left - 5, py(v), left);
  s += "</g>\n<g class=\"ticks\">\n";
  double xstep = xt.size() > 1 ? xt[1] - xt[0] : 1, ystep = yt.size() > 1 ? yt[1] - yt[0] : 1;
  for (double v : xt) {
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(v), H - bottom + 18,
                     tick_label(v, xstep));
  }
  for (double v : yt) {
    s += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 8, py(v) + 4,
                     tick_label(v, ystep));
  }
  s += "</g>\n";
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">step</text>\n", (left + W - right) / 2, H - 18);
  s += fmt::format("<text x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0})\">{1}</text>\n",
                   (top + H - bottom) / 2, xml_escape(metric));
  s += "<g class=\"curves\" fill=\"none\" stroke-width=\"2\">\n";
  std::size_t drawn = 0;
  std::string legend;
  for (const auto& r : runs) {
    if (r.curve.empty()) continue;
    const char* color = colors[drawn % std::size(colors)];
    std::string d;
    for (auto [x, y] : r.curve) d += fmt::format("{}{:.1f} {:.1f}", d.empty() ? "M" : " L", px(x), py(y));
    s += fmt::format("<path class=\"curve\" stroke=\"{}\" d=\"{}\"><title>{}</title></path>\n", color, d,
                     xml_escape(r.label));
    double ly = top + 10 + 18 * static_cast<double>(drawn);
    legend += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"/>"
        "<text x=\"{4}\" y=\"{5:.1f}\">{6}</text>\n",
        W - right - 230, ly, W - right - 205, color, W - right - 198, ly + 4,
        xml_escape(fmt::format("{} ({} rank{})", r.label, r.world_size, r.world_size == 1 ? "" : "s")));
    ++drawn;
  }
  s += "</g>\n";
  if (drawn > 0) {
    s += fmt::format(
        "<g class=\"legend\">\n<rect x=\"{}\" y=\"{}\" width=\"225\" height=\"{:.0f}\" fill=\"white\" "
        "fill-opacity=\"0.85\" stroke=\"#999\"/>\n",
        W - right - 237, top, 18.0 * static_cast<double>(drawn) + 4);
    s += legend + "</g>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace ddp::launcher
