#include <doctest/doctest.h>

#include "common/error.hpp"
#include "launcher/outputs/metrics.hpp"

using namespace ddp::launcher;

namespace {
std::string usage_error(std::string_view spec) {
  try {
    parse_metric_pattern(spec);
  } catch (const ddp::UsageError& e) {
    return e.what();
  }
  FAIL("expected a UsageError");
  return {};
}
}  // namespace

TEST_CASE("an SDK metric line: pairs in order; other lines are not metric lines") {
  auto v = parse_metric_line("@ddp-metric step=12 loss=0.5312 samples_per_s=812.4");
  REQUIRE(v);
  REQUIRE(v->size() == 3);
  CHECK((*v)[0].name == "step");
  CHECK((*v)[0].value == 12);
  CHECK((*v)[1].name == "loss");
  CHECK((*v)[1].value == doctest::Approx(0.5312));
  CHECK((*v)[2].value == doctest::Approx(812.4));
  CHECK_FALSE(parse_metric_line("step=12 loss=0.5"));
  CHECK_FALSE(parse_metric_line(" @ddp-metric loss=1"));
  CHECK_FALSE(parse_metric_line("@ddp-metricloss=1"));
}

TEST_CASE("malformed pairs are skipped, the rest kept") {
  auto v = parse_metric_line("@ddp-metric  loss=abc 1x=2 noeq acc.top1=-1.5e-2 lr=+0.1 x=");
  REQUIRE(v);
  REQUIRE(v->size() == 2);
  CHECK((*v)[0].name == "acc.top1");
  CHECK((*v)[0].value == doctest::Approx(-0.015));
  CHECK((*v)[1].name == "lr");
}

TEST_CASE("metric names") {
  CHECK(valid_metric_name("loss"));
  CHECK(valid_metric_name("_x.y_2"));
  CHECK_FALSE(valid_metric_name("2x"));
  CHECK_FALSE(valid_metric_name(""));
  CHECK_FALSE(valid_metric_name("a-b"));
}

TEST_CASE("SDK lines: the step key gives the step of the other values") {
  MetricExtractor x;
  auto rows = x.on_line(1, 3, "@ddp-metric step=12 loss=0.5 samples_per_s=800");
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].attempt == 1);
  CHECK(rows[0].rank == 3);
  CHECK(rows[0].step == 12);
  CHECK(rows[0].name == "loss");
  CHECK(rows[1].name == "samples_per_s");
  CHECK(x.on_line(0, 0, "plain output").empty());
}

TEST_CASE("SDK lines without a step count per rank") {
  MetricExtractor x;
  CHECK(x.on_line(0, 0, "@ddp-metric loss=3")[0].step == 1);
  CHECK(x.on_line(0, 1, "@ddp-metric loss=3")[0].step == 1);
  CHECK(x.on_line(0, 0, "@ddp-metric loss=2\r")[0].step == 2);
}

TEST_CASE("pattern metrics: step = matches so far on that rank, or the step metric on the line") {
  MetricExtractor x({parse_metric_pattern(R"(loss=Loss\s+([0-9.]+))")});
  CHECK(x.on_line(0, 0, "Epoch: [0][ 1/10]  Loss 2.5000 (2.5000)")[0].step == 1);
  auto r = x.on_line(0, 0, "Epoch: [0][ 2/10]  Loss 2.2500 (2.3750)");
  REQUIRE(r.size() == 1);
  CHECK(r[0].step == 2);
  CHECK(r[0].value == doctest::Approx(2.25));
  CHECK(x.on_line(0, 1, "Loss 9")[0].step == 1);
  CHECK(x.on_line(0, 0, "no match here").empty());

  MetricExtractor y({parse_metric_pattern(R"(loss=Loss\s+([0-9.]+))"), parse_metric_pattern(R"(step=\[\s*(\d+)/)")});
  auto s = y.on_line(0, 0, "Epoch: [0][ 7/10]  Loss 1.5 (2.0)");
  REQUIRE(s.size() == 1);
  CHECK(s[0].name == "loss");
  CHECK(s[0].step == 7);
}

TEST_CASE("a pattern without a group takes the whole match; a non-number is no row") {
  MetricExtractor x({parse_metric_pattern(R"(acc=[0-9]+\.[0-9]+)"), parse_metric_pattern(R"(loss=Loss (\S+))")});
  auto r = x.on_line(0, 0, "acc 93.5% Loss nan?");
  REQUIRE(r.size() == 1);
  CHECK(r[0].name == "acc");
  CHECK(r[0].value == doctest::Approx(93.5));
}

TEST_CASE("bad --metric values are usage errors naming them") {
  CHECK(usage_error("loss").find("expected NAME=REGEX") != std::string::npos);
  CHECK(usage_error("9loss=x").find("'9loss' is not a metric name") != std::string::npos);
  // RE2 (linear, safe on any line) has no lookaround or backreferences: said, not crashed on.
  CHECK(usage_error("acc=[0-9.]+(?=%)").find("RE2 syntax: no backreferences or lookaround") != std::string::npos);
  auto msg = usage_error("loss=Loss\\s+([0-9.]+");
  CHECK(msg.find("--metric loss") != std::string::npos);
  CHECK(msg.find("not a valid regular expression") != std::string::npos);
  CHECK(usage_error("loss=").find("empty") != std::string::npos);
}

TEST_CASE("CSV rows: time,attempt,rank,step,name,value; no step stays empty") {
  CHECK(format_metric_row(12.5, {1, 2, 30.0, "loss", 0.25}) == "12.500,1,2,30,loss,0.25");
  CHECK(format_metric_row(1, {0, 0, std::nullopt, "gpu_util", 35}) == "1.000,0,0,,gpu_util,35");
}
