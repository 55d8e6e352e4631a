#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "common/error.hpp"
#include "launcher/outputs/report.hpp"

using namespace ddp::launcher;

namespace {
const char* kTwoRanksWithRestart =
    "time,attempt,rank,step,name,value\n"
    "100.0,0,0,1,loss,4.0\n"
    "100.0,0,1,1,loss,2.0\n"
    "100.5,0,0,1,samples_per_s,10\n"
    "101.0,0,0,2,loss,3.0\n"
    "101.0,0,1,2,loss,3.0\n"
    "101.0,0,0,2,samples_per_s,100\n"
    "101.0,0,1,2,samples_per_s,50\n"
    "101.5,0,0,,gpu_util,35\n"
    "102.0,1,0,2,loss,2.0\n"  // attempt 1 resumed at step 2: it replaces attempt 0's step 2
    "102.0,1,1,2,loss,2.0\n"
    "103.0,1,0,3,loss,1.0\n"
    "103.0,1,1,3,loss,1.0\n";
}

TEST_CASE("a run's summary: mean over ranks per step, the latest attempt wins, throughput summed") {
  auto r = summarize_run(kTwoRanksWithRestart, nullptr, "run-a");
  CHECK(r.label == "run-a");
  CHECK(r.world_size == 2);
  CHECK(r.attempts == 2);
  REQUIRE(r.curve.size() == 3);
  CHECK(r.curve[0] == std::pair{1.0, 3.0});
  CHECK(r.curve[1] == std::pair{2.0, 2.0});
  CHECK(r.curve[2] == std::pair{3.0, 1.0});
  CHECK(*r.steps == 3);
  CHECK(*r.first_value == 3);
  CHECK(*r.last_value == 1);
  CHECK(*r.duration_s == doctest::Approx(3));
  CHECK(*r.samples_per_s == doctest::Approx(150));  // rank 0 without its warm-up report + rank 1
}

TEST_CASE("run.json supplies the world size, the attempts and the duration") {
  nlohmann::json info{{"world_size", 4}, {"attempts", 3}, {"started", 10.0}, {"finished", 25.5}};
  auto r = summarize_run(kTwoRanksWithRestart, info, "x");
  CHECK(r.world_size == 4);
  CHECK(r.attempts == 3);
  CHECK(*r.duration_s == doctest::Approx(15.5));
}

TEST_CASE("a run without the metric has no curve; a malformed row names its line") {
  auto r = summarize_run("time,attempt,rank,step,name,value\n1,0,0,,gpu_util,3\n", nullptr, "x");
  CHECK(r.curve.empty());
  CHECK_FALSE(r.steps);
  CHECK_THROWS_WITH_AS(summarize_run("time,attempt,rank,step,name,value\n1,0,0,abc,loss,3\n", nullptr, "d"),
                       doctest::Contains("d: line 2"), ddp::UsageError);
}

TEST_CASE("the summary table has a row per run") {
  auto text = format_summaries({summarize_run(kTwoRanksWithRestart, nullptr, "run-a")});
  CHECK(text.find("first loss") != std::string::npos);
  CHECK(text.find("run-a") != std::string::npos);
  CHECK(text.find("150.0") != std::string::npos);
}

TEST_CASE("nice ticks: 1/2/5 steps covering the range") {
  auto t = nice_ticks(0.13, 4.2);
  REQUIRE(t.size() >= 4);
  CHECK(t.front() == doctest::Approx(0));
  CHECK(t[1] - t[0] == doctest::Approx(1));
  CHECK(t.back() == doctest::Approx(5));
  auto fine = nice_ticks(1.2, 2.3);
  CHECK(fine.front() == doctest::Approx(1.2));
  CHECK(fine[1] - fine[0] == doctest::Approx(0.2));
  auto flat = nice_ticks(2, 2);
  CHECK(flat.size() >= 2);
}

TEST_CASE("the chart: one curve path per run with a curve, a legend entry each, escaped labels") {
  auto a = summarize_run(kTwoRanksWithRestart, nullptr, "a<1>");
  auto b = summarize_run("1,0,0,1,loss,5\n2,0,0,5,loss,0.5\n", nullptr, "b");
  auto none = summarize_run("", nullptr, "empty");
  auto svg = render_chart_svg({a, b, none});
  auto count = [&](const std::string& needle) {
    std::size_t n = 0;
    for (auto pos = svg.find(needle); pos != std::string::npos; pos = svg.find(needle, pos + 1)) ++n;
    return n;
  };
  CHECK(count("<path class=\"curve\"") == 2);
  CHECK(svg.find("a&lt;1&gt; (2 ranks)") != std::string::npos);
  CHECK(svg.find("b (1 rank)") != std::string::npos);
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.rfind("</svg>") != std::string::npos);
}

namespace {
// The points of the chart's curve paths, in pixels: "M x y L x y ..." per <path class="curve">.
std::vector<std::vector<std::pair<double, double>>> curve_points(const std::string& svg) {
  std::vector<std::vector<std::pair<double, double>>> out;
  const std::string open = "<path class=\"curve\"";
  for (auto pos = svg.find(open); pos != std::string::npos; pos = svg.find(open, pos + 1)) {
    auto d = svg.find(" d=\"", pos) + 4;
    std::string path = svg.substr(d, svg.find('"', d) - d);
    std::vector<std::pair<double, double>> pts;
    for (char& c : path) c = (c == 'M' || c == 'L') ? ' ' : c;
    std::istringstream in(path);
    double x = 0, y = 0;
    while (in >> x >> y) pts.emplace_back(x, y);
    out.push_back(pts);
  }
  return out;
}

std::vector<std::string> texts_of(const std::string& svg, const std::string& cls) {
  std::vector<std::string> out;
  const std::string open = "<text class=\"" + cls + "\"";
  for (auto pos = svg.find(open); pos != std::string::npos; pos = svg.find(open, pos + 1)) {
    auto b = svg.find('>', pos) + 1;
    out.push_back(svg.substr(b, svg.find("</text>", b) - b));
  }
  return out;
}

const char* kDecades =
    "time,attempt,rank,step,name,value\n"
    "50,0,0,1,loss,100\n"
    "51,0,0,2,loss,10\n"
    "60,0,0,3,loss,1\n"
    "70,0,0,4,loss,0.1\n";
}  // namespace

TEST_CASE("--log-y: values a decade apart are equally spaced, ticks are powers of ten") {
  auto r = summarize_run(kDecades, nullptr, "run");
  auto linear = curve_points(render_chart_svg({r}));
  auto log = curve_points(render_chart_svg({r}, "loss", {ChartX::Step, true}));
  REQUIRE(log.size() == 1);
  REQUIRE(log[0].size() == 4);
  double gap = log[0][1].second - log[0][0].second;
  CHECK(gap > 50);  // lower values lower on the chart: larger pixel y
  CHECK(log[0][2].second - log[0][1].second == doctest::Approx(gap).epsilon(0.01));
  CHECK(log[0][3].second - log[0][2].second == doctest::Approx(gap).epsilon(0.01));
  // On the linear axis the same values are not equally spaced: the two charts differ.
  CHECK(linear[0][2].second - linear[0][1].second != doctest::Approx(linear[0][1].second - linear[0][0].second));
  CHECK(texts_of(render_chart_svg({r}, "loss", {ChartX::Step, true}), "ytick") ==
        std::vector<std::string>{"0.1", "1", "10", "100"});
  CHECK(render_chart_svg({r}, "loss", {ChartX::Step, true}).find("loss (log scale)") != std::string::npos);
}

TEST_CASE("--log-y refuses a value at or below zero, naming the run, the step and the flag") {
  auto r = summarize_run("1,0,0,1,loss,2\n2,0,0,7,loss,0\n", nullptr, "zero-run");
  CHECK_THROWS_WITH_AS(render_chart_svg({r}, "loss", {ChartX::Step, true}),
                       doctest::Contains("--log-y: zero-run has loss 0 at step 7"), ddp::UsageError);
  CHECK_NOTHROW(render_chart_svg({r}));
}

TEST_CASE("log ticks: decades, with 2 and 5 between them over a short range") {
  CHECK(log_ticks(0.3, 40) == std::vector<double>{0.1, 1, 10, 100});
  CHECK(log_ticks(3, 40) == std::vector<double>{2, 5, 10, 20, 50});
  CHECK(log_ticks(0.001, 1000) == std::vector<double>{0.001, 0.01, 0.1, 1, 10, 100, 1000});
  auto one = log_ticks(3, 3);
  CHECK(one.front() <= 3);
  CHECK(one.back() >= 3);
}

TEST_CASE("--x time: points placed by seconds since the run started, not by step") {
  auto r = summarize_run(kDecades, nullptr, "run");
  REQUIRE(r.time_curve.size() == 4);
  CHECK(r.time_curve[0] == std::pair{0.0, 100.0});  // no run.json: the first row starts the clock
  CHECK(r.time_curve[2] == std::pair{10.0, 1.0});
  CHECK(r.time_curve[3] == std::pair{20.0, 0.1});
  auto svg = render_chart_svg({r}, "loss", {ChartX::Time, false});
  auto pts = curve_points(svg)[0];
  // Steps 1 and 2 are one second apart, steps 2 and 3 nine: so are their x positions.
  CHECK((pts[2].first - pts[1].first) == doctest::Approx(9 * (pts[1].first - pts[0].first)).epsilon(0.01));
  CHECK(texts_of(svg, "xlabel") == std::vector<std::string>{"wall-clock time (s since the run started)"});
  CHECK(texts_of(svg, "xtick").back() == "20");
  auto by_step = curve_points(render_chart_svg({r}))[0];
  CHECK((by_step[2].first - by_step[1].first) == doctest::Approx(by_step[1].first - by_step[0].first).epsilon(0.01));
  CHECK(texts_of(render_chart_svg({r}), "xlabel") == std::vector<std::string>{"step"});
}

TEST_CASE("--x time starts the clock at run.json's start; a rank's latest report times its step") {
  nlohmann::json info{{"started", 95.0}, {"finished", 105.0}};
  auto r = summarize_run(kTwoRanksWithRestart, info, "x");
  REQUIRE(r.time_curve.size() == 3);
  CHECK(r.time_curve[0].first == doctest::Approx(5));  // step 1 at 100
  CHECK(r.time_curve[1].first == doctest::Approx(7));  // step 2: attempt 1's report at 102
  CHECK(r.time_curve[2].first == doctest::Approx(8));
}

TEST_CASE("inf, -inf and nan in the step or the value are skipped and counted; the chart is drawn around them") {
  const char* csv =
      "time,attempt,rank,step,name,value\n"
      "1,0,0,1,loss,4\n"
      "2,0,0,2,loss,inf\n"
      "3,0,0,inf,loss,3\n"
      "4,0,0,3,loss,-inf\n"
      "5,0,0,-inf,loss,2\n"
      "6,0,0,nan,loss,2\n"
      "7,0,0,4,loss,nan\n"
      "8,0,0,5,loss,1\n"
      "9,0,0,,gpu_util,inf\n"  // not charted: not counted
      "9,0,0,5,samples_per_s,inf\n";
  auto r = summarize_run(csv, nullptr, "diverged");
  CHECK(r.skipped_non_finite == 7);
  REQUIRE(r.curve.size() == 2);
  CHECK(r.curve[0] == std::pair{1.0, 4.0});
  CHECK(r.curve[1] == std::pair{5.0, 1.0});
  CHECK(*r.steps == 5);
  CHECK_FALSE(r.samples_per_s);
  for (auto x : {ChartX::Step, ChartX::Time}) {
    for (bool log_y : {false, true}) {
      auto svg = render_chart_svg({r}, "loss", {x, log_y});
      auto pts = curve_points(svg);
      REQUIRE(pts.size() == 1);
      CHECK(pts[0].size() == 2);
      CHECK(texts_of(svg, "skipped") == std::vector<std::string>{"7 non-finite values (inf, nan) not drawn"});
    }
  }
  // Only non-finite points: no curve, still a chart.
  auto none = summarize_run("1,0,0,inf,loss,1\n2,0,0,1,loss,-inf\n", nullptr, "all-bad");
  CHECK(none.curve.empty());
  CHECK(none.skipped_non_finite == 2);
  CHECK_NOTHROW(render_chart_svg({none}));
}

TEST_CASE("values at the edge of the double range: ±1e308 averaged and charted without overflow") {
  auto r = summarize_run(
      "1,0,0,1,loss,1e308\n1,0,1,1,loss,1e308\n2,0,0,2,loss,-1e308\n2,0,1,2,loss,-1e308\n"
      "3,0,0,1e308,loss,0\n",
      nullptr, "edge");
  REQUIRE(r.curve.size() == 3);
  CHECK(r.curve[0].second == 1e308);
  CHECK(r.curve[1].second == -1e308);
  auto pts = curve_points(render_chart_svg({r}));
  REQUIRE(pts.size() == 1);
  REQUIRE(pts[0].size() == 3);
  for (auto [x, y] : pts[0]) {
    CHECK(std::isfinite(x));
    CHECK(std::isfinite(y));
  }
  CHECK(pts[0][0].second < pts[0][2].second);  // 1e308 above 0 above -1e308 (pixel y grows downwards)
  CHECK(pts[0][2].second < pts[0][1].second);
  CHECK_FALSE(nice_ticks(-1e308, 1e308).empty());
  CHECK(nice_ticks(0, std::numeric_limits<double>::infinity()).empty());
}
