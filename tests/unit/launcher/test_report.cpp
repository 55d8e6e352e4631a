#include <doctest/doctest.h>

#include "common/error.hpp"
#include "launcher/report.hpp"

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
