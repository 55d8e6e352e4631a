// `ddp-launch report RUN_DIR...`: a summary per run from its metrics.csv (+ run.json) and a
// loss-vs-step chart, one curve per run, as SVG.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "launcher/commands.hpp"
#include "launcher/report.hpp"

namespace fs = std::filesystem;

namespace ddp::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> run_dirs;
  std::string out;
  std::string metric = "loss";
};

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Command add_report_command(CLI::App& app) {
  auto* sub = app.add_subcommand("report", "Summarise runs from their metrics.csv and chart loss vs step (SVG)");
  auto a = std::make_shared<ReportArgs>();
  sub->add_option("run_dirs", a->run_dirs, "Run directories (--run-dir/--log-dir of `run`, or the one it printed)")
      ->required();
  sub->add_option("--out,-o,--chart", a->out, "Chart file (default: <first run dir>/loss.svg)");
  sub->add_option("--metric", a->metric, "Metric to chart and summarise")->capture_default_str();
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
    std::ofstream file(out);
    file << launcher::render_chart_svg(runs, a->metric);
    if (!file) throw Error(fmt::format("cannot write the chart to {}", out.string()));
    int curves = 0;
    for (const auto& r : runs) curves += r.curve.empty() ? 0 : 1;
    std::cout << fmt::format("chart: {} ({} curve{})\n", out.string(), curves, curves == 1 ? "" : "s");
    for (const auto& r : runs) {
      if (r.curve.empty()) std::cerr << fmt::format("note: {} has no '{}' metric with a step\n", r.label, a->metric);
    }
    return 0;
  };
  return {sub, run};
}

}  // namespace ddp::cli
