// `ddp-launch report RUN_DIR...`: a summary per run from its metrics.csv (+ run.json) and a
// loss-vs-step chart, one curve per run, as SVG, or as PNG when --out ends in .png (the SVG
// converted by rsvg-convert, Debian package librsvg2-bin).
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "common/exit_status.hpp"
#include "launcher/commands/commands.hpp"
#include "launcher/outputs/report.hpp"
#include "platform/host.hpp"
#include "platform/subprocess.hpp"

namespace fs = std::filesystem;

namespace ddp::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> run_dirs;
  std::string out;
  std::string metric = "loss";
  bool log_y = false;
  std::string x_axis = "step";
};

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream file(path);
  file << text;
  file.close();
  if (!file)
    throw Error(
        fmt::format("cannot write the chart to {}: check that its directory exists and is writable", path.string()));
}

bool wants_png(const fs::path& out) {
  auto ext = out.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".png";
}

// The SVG goes to a temporary file next to `out`, rsvg-convert turns it into `out`.
void write_png(const fs::path& out, const std::string& svg) {
  constexpr auto kTimeout = std::chrono::seconds(60);
  fs::path tmp = out;
  tmp += fmt::format(".{}.svg", platform::current_pid());
  write_file(tmp, svg);
  auto r = run_command({"rsvg-convert", "--format", "png", "--output", out.string(), tmp.string()}, kTimeout, true);
  std::error_code ec;
  fs::remove(tmp, ec);
  if (!r.started) {
    throw Error(fmt::format(
        "cannot render {} as PNG: rsvg-convert could not be started ({}). Install it (Debian package "
        "librsvg2-bin: apt-get install librsvg2-bin; packaging/install-deps.sh does; on Windows put librsvg's "
        "rsvg-convert.exe on PATH) or give --out a .svg name",
        out.string(), r.start_error));
  }
  if (!r.ok()) {
    auto why = r.timed_out ? fmt::format("ran past {} s", kTimeout.count())
                           : describe_exit(ExitStatus::of(r.exit_code, r.signal));
    fs::remove(out, ec);
    throw Error(
        fmt::format("cannot render {} as PNG: rsvg-convert failed ({}): {}. Give --out a .svg name to keep "
                    "the chart as SVG",
                    out.string(), why, r.errors.empty() ? r.output : r.errors));
  }
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "report", "Summarise runs from their metrics.csv and chart a metric vs step or time (SVG, or PNG)");
  auto a = std::make_shared<ReportArgs>();
  sub->add_option("run_dirs", a->run_dirs, "Run directories (--run-dir/--log-dir of `run`, or the one it printed)")
      ->required();
  sub->add_option("--out,-o,--chart", a->out,
                  "Chart file (default: <first run dir>/loss.svg); a name ending in .png is rendered as PNG with "
                  "rsvg-convert (package librsvg2-bin)");
  sub->add_option("--metric", a->metric, "Metric to chart and summarise")->capture_default_str();
  sub->add_flag("--log-y", a->log_y, "Log-scale y axis (decades); every charted value must be positive");
  sub->add_option("--x", a->x_axis,
                  "x axis: step (the metric's step) or time (wall-clock seconds since the run started)")
      ->check(CLI::IsMember({"step", "time"}))
      ->capture_default_str();
  auto run = [a]() -> int {
    std::vector<launcher::RunSummary> runs;
    std::set<std::string> names;
    for (const auto& d : a->run_dirs) names.insert(fs::path(d).lexically_normal().filename().string());
    for (const auto& d : a->run_dirs) {
      fs::path dir(d);
      auto csv = dir / "metrics.csv";
      if (!fs::is_regular_file(csv)) {
        throw UsageError(
            fmt::format("{} has no metrics.csv: give a directory that `ddp-launch run` recorded "
                        "metrics in (--run-dir, --log-dir, or the path it printed at the end)",
                        d));
      }
      nlohmann::json info;
      if (auto text = read_all(dir / "run.json"); !text.empty()) {
        info = nlohmann::json::parse(text, nullptr, false);
        if (info.is_discarded()) info = nullptr;
      }
      // Short labels when the directory names tell the runs apart, paths otherwise.
      auto label = names.size() == a->run_dirs.size() ? dir.lexically_normal().filename().string() : d;
      if (label.empty()) label = d;
      runs.push_back(launcher::summarize_run(read_all(csv), info, label, a->metric));
    }
    std::cout << launcher::format_summaries(runs, a->metric);
    fs::path out = a->out.empty() ? fs::path(a->run_dirs.front()) / fmt::format("{}.svg", a->metric) : fs::path(a->out);
    launcher::ChartOptions chart{a->x_axis == "time" ? launcher::ChartX::Time : launcher::ChartX::Step, a->log_y};
    auto svg = launcher::render_chart_svg(runs, a->metric, chart);
    if (wants_png(out)) {
      write_png(out, svg);
    } else {
      write_file(out, svg);
    }
    int curves = 0;
    for (const auto& r : runs) curves += r.curve.empty() ? 0 : 1;
    std::cout << fmt::format("chart: {} ({} curve{})\n", out.string(), curves, curves == 1 ? "" : "s");
    for (const auto& r : runs) {
      if (r.skipped_non_finite > 0) {
        std::cerr << fmt::format(
            "note: {}: {} row{} with an inf or nan step, value or time skipped ('{}' and samples_per_s); the chart "
            "and the summary leave them out\n",
            r.label, r.skipped_non_finite, r.skipped_non_finite == 1 ? "" : "s", a->metric);
      }
      if (r.curve.empty()) std::cerr << fmt::format("note: {} has no '{}' metric with a step\n", r.label, a->metric);
    }
    return 0;
  };
  return {sub, run};
}

}  // namespace ddp::cli
