#include "launcher/outputs/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "common/error.hpp"
#include "common/markup.hpp"
#include "launcher/outputs/metrics.hpp"

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

std::string tick_label(double v, double step) {
  if (v == 0) return "0";
  int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  if (std::abs(v) >= 1e6 || std::abs(v) < 1e-4) return fmt::format("{:.2g}", v);
  return fmt::format("{:.{}f}", v, std::clamp(decimals, 0, 6));
}

std::string opt(const std::optional<double>& v, const char* format = "{:.4g}") {
  return v ? fmt::format(fmt::runtime(format), *v) : "-";
}

// Each rank's throughput is the mean of its latest attempt's reports, without the first (warm-up)
// one; the run's is their sum. nullopt when no rank reported any.
std::optional<double> total_throughput(const std::map<std::pair<int, int>, std::vector<double>>& throughput) {
  std::map<int, std::pair<int, double>> per_rank;  // rank → (attempt, mean)
  for (const auto& [key, values] : throughput) {
    auto first = values.size() > 1 ? values.begin() + 1 : values.begin();
    double mean = 0;
    for (auto it = first; it != values.end(); ++it) mean += *it;
    mean /= static_cast<double>(values.end() - first);
    auto& slot = per_rank[key.first];
    if (key.second >= slot.first) slot = {key.second, mean};
  }
  if (per_rank.empty()) return std::nullopt;
  double total = 0;
  for (const auto& [rank, v] : per_rank) total += v.second;
  return total;
}

}  // namespace

RunSummary summarize_run(std::string_view csv, const nlohmann::json& run_info, std::string label,
                         std::string_view metric) {
  RunSummary r;
  r.label = std::move(label);
  struct Reported {
    int attempt = 0;
    double value = 0, time = 0;
  };
  std::map<std::pair<double, int>, Reported> latest;              // (step, rank) → its latest attempt's report
  std::map<std::pair<int, int>, std::vector<double>> throughput;  // (rank, attempt) → samples_per_s
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
    if (!(*attempt >= 0 && *attempt <= 1e9 && *rank >= 0 && *rank <= 1e9)) {
      throw UsageError(
          fmt::format("{}: line {} has an attempt or rank that is not a count: '{}'", r.label, lineno, line));
    }
    const bool has_step = !f[3].empty();
    const double step_value = has_step ? step.value_or(0.0) : 0.0;
    if (!std::isfinite(*time) || !std::isfinite(*value) || !std::isfinite(step_value)) {
      // inf/nan from a diverging model: the chart is drawn around it, and says how many it left out.
      if ((f[4] == metric && has_step) || f[4] == "samples_per_s") ++r.skipped_non_finite;
      continue;
    }
    t_first = std::min(t_first, *time);
    t_last = std::max(t_last, *time);
    int a = static_cast<int>(*attempt), k = static_cast<int>(*rank);
    max_attempt = std::max(max_attempt, a);
    if (f[4] == metric && has_step) {
      ranks.insert(k);
      auto& slot = latest[{step_value, k}];
      if (a >= slot.attempt) slot = {a, *value, *time};
    } else if (f[4] == "samples_per_s") {
      ranks.insert(k);
      throughput[{k, a}].push_back(*value);
    }
  }
  std::map<double, std::vector<double>> by_step;  // step → each rank's value
  std::map<double, double> step_time;             // step → when its last rank reported it
  for (const auto& [key, v] : latest) {
    by_step[key.first].push_back(v.value);
    step_time[key.first] = std::max(step_time[key.first], v.time);
  }
  for (const auto& [step, values] : by_step) {
    // Each value divided first: two ranks at 1e308 average to 1e308, not to inf.
    double mean = 0;
    for (double v : values) mean += v / static_cast<double>(values.size());
    r.curve.emplace_back(step, mean);
  }
  if (!r.curve.empty()) {
    r.steps = r.curve.back().first;
    r.first_value = r.curve.front().second;
    r.last_value = r.curve.back().second;
  }
  r.samples_per_s = total_throughput(throughput);
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
  double t0 = run_info.is_object() && run_info.contains("started") ? run_info["started"].get<double>() : t_first;
  for (const auto& [step, value] : r.curve) r.time_curve.emplace_back(step_time[step] - t0, value);
  std::stable_sort(r.time_curve.begin(), r.time_curve.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
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
  if (!std::isfinite(lo) || !std::isfinite(hi)) return {};
  if (!std::isfinite(hi - lo)) {
    // A range wider than the largest double (-1e308 to 1e308): ticks of the halved range, doubled.
    auto ticks = nice_ticks(lo / 2, hi / 2, target);
    std::erase_if(ticks, [](double v) { return !std::isfinite(2 * v); });
    for (auto& v : ticks) v *= 2;
    return ticks;
  }
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
  // Bounded: a step lost to rounding at the edges of the double range cannot loop for ever.
  for (double v = std::floor(lo / step + 1e-9) * step; v <= end + step * 1e-9 && ticks.size() < 4 * 64; v += step) {
    ticks.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
  }
  return ticks;
}

std::vector<double> log_ticks(double lo, double hi) {
  int d0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int d1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  if (d1 <= d0) d1 = d0 + 1;
  std::vector<double> ticks;
  const bool fine = d1 - d0 < 3;
  for (int d = d0; d <= d1; ++d) {
    double p = std::pow(10.0, d);
    ticks.push_back(p);
    if (fine && d < d1) ticks.push_back(2 * p), ticks.push_back(5 * p);
  }
  // Keep only one tick below lo and one above hi.
  while (ticks.size() > 2 && ticks[1] <= lo) ticks.erase(ticks.begin());
  while (ticks.size() > 2 && ticks[ticks.size() - 2] >= hi) ticks.pop_back();
  return ticks;
}

namespace {

// One axis of the chart: the data range widened to its ticks, linear or log10.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<double> ticks;

  double unit(double v) const {  // 0 at lo, 1 at hi; halved, so that -1e308 … 1e308 does not overflow
    return log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo))
               : (v / 2 - lo / 2) / (hi / 2 - lo / 2);
  }
  std::string label(double v) const {
    if (log) return std::abs(v) >= 1e4 || std::abs(v) < 1e-3 ? fmt::format("{:.0e}", v) : fmt::format("{:g}", v);
    return tick_label(v, ticks.size() > 1 ? ticks[1] - ticks[0] : 1);
  }
};

Axis make_axis(double lo, double hi, bool log) {
  Axis a;
  a.log = log;
  if (!(hi >= lo) || !std::isfinite(lo) || !std::isfinite(hi)) lo = log ? 1 : 0, hi = log ? 10 : 1;
  a.ticks = log ? log_ticks(lo, hi) : nice_ticks(lo, hi);
  if (a.ticks.empty()) a.ticks = {lo, hi};
  a.lo = std::min(lo, a.ticks.front());
  a.hi = std::max(hi, a.ticks.back());
  if (!(a.hi > a.lo)) a.hi = a.lo + 1;
  return a;
}

using Curve = std::vector<std::pair<double, double>>;

const Curve& curve_of(const RunSummary& r, ChartX x) { return x == ChartX::Time ? r.time_curve : r.curve; }

void check_positive(const std::vector<RunSummary>& runs, std::string_view metric) {
  for (const auto& r : runs) {
    for (std::size_t i = 0; i < r.curve.size(); ++i) {
      if (r.curve[i].second > 0) continue;
      throw UsageError(
          fmt::format("--log-y: {} has {} {} at step {:g}, which a log scale cannot show; drop --log-y "
                      "(or chart another --metric)",
                      r.label, metric, r.curve[i].second, r.curve[i].first));
    }
  }
}

struct Frame {
  static constexpr double W = 800, H = 480, left = 70, right = 20, top = 40, bottom = 60;
  Axis x, y;
  double px(double v) const { return left + x.unit(v) * (W - left - right); }
  double py(double v) const { return H - bottom - y.unit(v) * (H - top - bottom); }
};

std::string svg_axes(const Frame& f, std::string_view x_name, std::string_view metric) {
  constexpr double W = Frame::W, H = Frame::H, left = Frame::left, right = Frame::right, top = Frame::top,
                   bottom = Frame::bottom;
  std::string s = "<g class=\"grid\" stroke=\"#e0e0e0\">\n";
  for (double v : f.x.ticks)
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", f.px(v), top, H - bottom);
  for (double v : f.y.ticks)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>\n", left, f.py(v), W - right);
  s += "</g>\n<g class=\"axes\" stroke=\"black\">\n";
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\"/>\n", left, H - bottom, W - right);
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\"/>\n", left, top, H - bottom);
  for (double v : f.x.ticks)
    s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", f.px(v), H - bottom,
                     H - bottom + 5);
  for (double v : f.y.ticks)
    s += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"/>\n", left - 5, f.py(v), left);
  s += fmt::format("</g>\n<g class=\"ticks\" data-x-scale=\"linear\" data-y-scale=\"{}\">\n",
                   f.y.log ? "log" : "linear");
  for (double v : f.x.ticks) {
    s += fmt::format("<text class=\"xtick\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", f.px(v),
                     H - bottom + 18, f.x.label(v));
  }
  for (double v : f.y.ticks) {
    s += fmt::format("<text class=\"ytick\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", left - 8,
                     f.py(v) + 4, f.y.label(v));
  }
  s += "</g>\n";
  s += fmt::format("<text class=\"xlabel\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                   (left + W - right) / 2, H - 18, x_name);
  s += fmt::format(
      "<text class=\"ylabel\" x=\"18\" y=\"{0}\" text-anchor=\"middle\" transform=\"rotate(-90 18 {0})\">{1}{2}"
      "</text>\n",
      (top + H - bottom) / 2, escape_markup(metric), f.y.log ? " (log scale)" : "");
  return s;
}

std::string svg_curves(const Frame& f, const std::vector<RunSummary>& runs, ChartX x) {
  static const char* colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                 "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  constexpr double W = Frame::W, right = Frame::right, top = Frame::top;
  std::string s = "<g class=\"curves\" fill=\"none\" stroke-width=\"2\">\n";
  std::size_t drawn = 0;
  std::string legend;
  for (const auto& r : runs) {
    const auto& curve = curve_of(r, x);
    if (curve.empty()) continue;
    const char* color = colors[drawn % std::size(colors)];
    std::string d;
    for (auto [cx, cy] : curve) d += fmt::format("{}{:.1f} {:.1f}", d.empty() ? "M" : " L", f.px(cx), f.py(cy));
    s += fmt::format("<path class=\"curve\" stroke=\"{}\" d=\"{}\"><title>{}</title></path>\n", color, d,
                     escape_markup(r.label));
    double ly = top + 10 + 18 * static_cast<double>(drawn);
    legend += fmt::format(
        "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"3\"/>"
        "<text x=\"{4}\" y=\"{5:.1f}\">{6}</text>\n",
        W - right - 230, ly, W - right - 205, color, W - right - 198, ly + 4,
        escape_markup(fmt::format("{} ({} rank{})", r.label, r.world_size, r.world_size == 1 ? "" : "s")));
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
  return s;
}

}  // namespace

std::string render_chart_svg(const std::vector<RunSummary>& runs, std::string_view metric,
                             const ChartOptions& options) {
  if (options.log_y) check_positive(runs, metric);
  double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
  for (const auto& r : runs) {
    for (auto [x, y] : curve_of(r, options.x)) {
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  Frame f{make_axis(x0, x1, false), make_axis(y0, y1, options.log_y)};
  const std::string_view x_name = options.x == ChartX::Time ? "wall-clock time (s since the run started)" : "step";
  std::string s = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"{2}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{3} vs {4}</text>\n",
      Frame::W, Frame::H, (Frame::left + Frame::W - Frame::right) / 2, escape_markup(metric),
      options.x == ChartX::Time ? "time" : "step");
  int skipped = 0;
  for (const auto& r : runs) skipped += r.skipped_non_finite;
  if (skipped > 0) {
    s += fmt::format(
        "<text class=\"skipped\" x=\"{}\" y=\"36\" text-anchor=\"middle\" fill=\"#b00\">"
        "{} non-finite value{} (inf, nan) not drawn</text>\n",
        (Frame::left + Frame::W - Frame::right) / 2, skipped, skipped == 1 ? "" : "s");
  }
  s += svg_axes(f, x_name, metric);
  s += svg_curves(f, runs, options.x);
  s += "</svg>\n";
  return s;
}

}  // namespace ddp::launcher
