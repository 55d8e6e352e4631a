#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "launcher/hang/straggler_detector.hpp"
#include "launcher/outputs/metrics.hpp"

using namespace ddp::launcher;

namespace {

// work(rank, step) → seconds a rank computes before it reports step `step` (1-based).
using Work = std::function<double(int rank, int step)>;

struct Report {
  double time;
  int rank;
  int step;
};

// Feeds the reports in time order (ties: by rank), collecting the verdicts and the step each came at.
struct Fed {
  std::vector<StragglerVerdict> verdicts;
  std::vector<int> at_step;
};
Fed feed(StragglerDetector& d, std::vector<Report> reports) {
  std::sort(reports.begin(), reports.end(),
            [](const Report& a, const Report& b) { return std::tie(a.time, a.rank) < std::tie(b.time, b.rank); });
  Fed out;
  for (const auto& r : reports) {
    if (auto v = d.on_step(r.rank, r.time)) {
      out.verdicts.push_back(*v);
      out.at_step.push_back(r.step);
    }
  }
  return out;
}

// A DDP job: every rank reports step k, then enters the step's collective; the collective (taking
// `collective_s`) ends when the last rank entered it, and every rank starts step k+1 then.
std::vector<Report> lockstep(int ranks, int steps, const Work& work, double collective_s = 0.01) {
  std::vector<Report> out;
  double release = 0;
  for (int k = 1; k <= steps; ++k) {
    double last = release;
    for (int r = 0; r < ranks; ++r) {
      double t = release + work(r, k);
      out.push_back({t, r, k});
      last = std::max(last, t);
    }
    release = last + collective_s;
  }
  return out;
}

// Ranks that never wait for each other, rank r starting at offset[r].
std::vector<Report> independent(int ranks, int steps, const Work& work, std::vector<double> offset = {}) {
  std::vector<Report> out;
  for (int r = 0; r < ranks; ++r) {
    double t = r < static_cast<int>(offset.size()) ? offset[r] : 0;
    for (int k = 1; k <= steps; ++k) {
      t += work(r, k);
      out.push_back({t, r, k});
    }
  }
  return out;
}

// ±`spread` (0.2: ±20 %) around `base`, reproducible.
Work jittered(double base, double spread, unsigned seed) {
  auto gen = std::make_shared<std::mt19937>(seed);
  return [=](int, int) { return base * std::uniform_real_distribution<double>(1 - spread, 1 + spread)(*gen); };
}

std::string usage_error(const std::string& value) {
  try {
    parse_straggler_threshold(value);
  } catch (const ddp::UsageError& e) {
    return e.what();
  }
  FAIL("expected a UsageError for '" << value << "'");
  return {};
}

}  // namespace

TEST_CASE("DDP: a rank 0.3 s late to every collective is reported once, within 20 steps, with its ratio") {
  for (int ranks : {2, 3, 8}) {
    CAPTURE(ranks);
    StragglerDetector d(0.75);
    // Every rank's period is the slow one's (the collective); only the slow rank's reports come late.
    auto got = feed(d, lockstep(ranks, 100, [](int r, int) { return 0.1 + (r == 1 ? 0.3 : 0.0); }));
    REQUIRE(got.verdicts.size() == 1);
    CHECK(got.verdicts[0].rank == 1);
    CHECK(got.at_step[0] <= 20);
    // Step times include the collective: 0.11 s for the others, 0.41 s for rank 1. The median
    // rate of two ranks is their mean.
    const double median_rate = ranks == 2 ? (1 / 0.11 + 1 / 0.41) / 2 : 1 / 0.11;
    CHECK(got.verdicts[0].ratio == doctest::Approx((1 / 0.41) / median_rate).epsilon(0.01));
    CHECK(got.verdicts[0].median_step_s == doctest::Approx(1 / median_rate).epsilon(0.01));
    CHECK(got.verdicts[0].rank_step_s == doctest::Approx(0.41).epsilon(0.01));
  }
}

TEST_CASE("DDP, balanced: ±20 % jitter on every rank and step is never reported") {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    StragglerDetector d(0.75);
    CHECK(feed(d, lockstep(4, 300, jittered(0.2, 0.2, seed))).verdicts.empty());
    StragglerDetector two(0.75);
    CHECK(feed(two, lockstep(2, 300, jittered(0.2, 0.2, seed + 100))).verdicts.empty());
  }
}

TEST_CASE("DDP, balanced: a slow first step (on one rank, or on all) is never reported") {
  for (int slow : {0, 1, -1}) {
    CAPTURE(slow);
    StragglerDetector d(0.75);
    auto work = [slow](int r, int k) { return k <= 2 && (slow < 0 || r == slow) ? 8.0 : 0.2; };
    CHECK(feed(d, lockstep(3, 60, work)).verdicts.empty());
  }
}

TEST_CASE("DDP, balanced: a common pause (evaluation on every rank, a checkpoint on rank 0) is never reported") {
  StragglerDetector d(0.75);
  auto work = [](int r, int k) {
    if (k % 25 == 0) return 30.0;            // evaluation: every rank
    if (k % 40 == 0 && r == 0) return 12.0;  // checkpoint: rank 0 saves, the others wait
    return 0.2;
  };
  CHECK(feed(d, lockstep(4, 200, work)).verdicts.empty());
  // Two pauses in a row within one window change nothing either.
  StragglerDetector twice(0.75);
  auto work2 = [](int r, int k) { return (k == 30 || k == 31) && r == 2 ? 10.0 : 0.2; };
  CHECK(feed(twice, lockstep(3, 60, work2)).verdicts.empty());
}

TEST_CASE("ranks reporting within milliseconds, always in the same order, are equal (read-order noise)") {
  StragglerDetector d(0.75);
  // No compute: the reports' times are only the order the loop read the pipes in.
  CHECK(feed(d, lockstep(
                    3, 100, [](int r, int) { return 0.001 * r; }, 0.0005))
            .verdicts.empty());
}

TEST_CASE("one verdict per episode: again after the rank recovered and slowed down again") {
  StragglerDetector d(0.75);
  auto work = [](int r, int k) {
    bool slow = r == 2 && ((k > 10 && k <= 50) || k > 100);
    return 0.1 + (slow ? 0.3 : 0.0);
  };
  auto got = feed(d, lockstep(3, 150, work));
  REQUIRE(got.verdicts.size() == 2);
  CHECK(got.verdicts[0].rank == 2);
  CHECK(got.verdicts[1].rank == 2);
  CHECK(got.at_step[0] > 10);
  CHECK(got.at_step[0] <= 30);
  CHECK(got.at_step[1] > 100);
  CHECK(got.at_step[1] <= 120);
}

TEST_CASE("a rank hovering around the threshold is reported once, not at every crossing") {
  StragglerDetector d(0.75);
  // Ratio alternates between ~0.72 and ~0.78 per window: below the threshold, never back above 0.875.
  auto work = [](int r, int k) { return r == 1 ? ((k / 10) % 2 ? 0.2 / 0.72 : 0.2 / 0.78) : 0.2; };
  auto got = feed(d, independent(3, 200, work));
  CHECK(got.verdicts.size() == 1);
}

TEST_CASE("ranks that never wait for each other: a slower rate is reported, a phase offset is not") {
  StragglerDetector slow(0.75);
  auto got = feed(slow, independent(3, 60, [](int r, int) { return r == 0 ? 0.5 : 0.2; }));
  REQUIRE(got.verdicts.size() == 1);
  CHECK(got.verdicts[0].rank == 0);
  CHECK(got.verdicts[0].ratio == doctest::Approx(0.4));
  CHECK(got.at_step[0] <= 20);
  // Same rate, started at different times (a slower import, a later spawn): more than a step apart
  // (a rank reports step k+1 before another reports k: they do not wait for each other) ...
  for (double offset : {0.3, 1.1, 7.0}) {
    CAPTURE(offset);
    StragglerDetector d(0.75);
    CHECK(feed(d, independent(3, 200, jittered(0.2, 0.2, 7), {0.0, offset, offset / 2})).verdicts.empty());
  }
  // ... or in phase within a quarter of a step.
  StragglerDetector in_phase(0.75);
  CHECK(feed(in_phase, independent(3, 200, [](int, int) { return 0.2; }, {0.0, 0.05, 0.025})).verdicts.empty());
}

TEST_CASE("one rank alone, or a rank that stops, is no straggler") {
  StragglerDetector alone(0.75);
  CHECK(feed(alone, lockstep(1, 100, [](int, int) { return 0.4; })).verdicts.empty());
  // Rank 1 stops reporting after step 15 (a hang: the watchdog's business); the others go on.
  StragglerDetector stops(0.75);
  auto reports = independent(3, 80, [](int, int) { return 0.2; });
  std::erase_if(reports, [](const Report& r) { return r.rank == 1 && r.step > 15; });
  CHECK(feed(stops, reports).verdicts.empty());
}

TEST_CASE("a rank is judged from its full window on, against ranks with full windows") {
  StragglerDetector d(0.75);
  const int reports = static_cast<int>(StragglerDetector::kWindow) + 1;  // a window of intervals
  for (int k = 0; k < reports; ++k) CHECK_FALSE(d.on_step(0, k * 1.0));
  for (int k = 0; k < reports; ++k) {
    auto v = d.on_step(1, 100 + k * 5.0);  // 5× slower
    CHECK(static_cast<bool>(v) == (k == reports - 1));
  }
}

TEST_CASE("reset forgets the attempt: the new one's pace is judged afresh") {
  StragglerDetector d(0.75);
  auto got = feed(d, independent(2, 40, [](int r, int) { return r == 1 ? 1.0 : 0.2; }));
  CHECK(got.verdicts.size() == 1);
  d.reset();
  auto again = feed(d, independent(2, 40, [](int r, int) { return r == 1 ? 1.0 : 0.2; }, {1000, 1000}));
  CHECK(again.verdicts.size() == 1);  // a new episode in the new attempt
}

TEST_CASE("the watch: one report per new step of a rank, per attempt") {
  struct Timed {
    double time;
    MetricRow row;
  };
  // Rank 1 is 3× slower; two metrics per step, a metric logged every 10 steps, a GPU sample (no step).
  auto rows = [](int attempt, double start) {
    std::vector<Timed> out;
    for (int k = 1; k <= 30; ++k) {
      for (int rank : {0, 1}) {
        double t = start + k * (rank == 1 ? 0.6 : 0.2);
        for (const char* name : {"loss", "lr"}) out.push_back({t, {attempt, rank, double(k), name, 1.0}});
        if (k % 10 == 0) out.push_back({t, {attempt, rank, double(k / 10), "eval_acc", 0.5}});
        out.push_back({t, {attempt, rank, std::nullopt, "gpu_util", 50}});
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const Timed& a, const Timed& b) { return a.time < b.time; });
    return out;
  };
  StragglerWatch w(0.75);
  std::vector<StragglerVerdict> verdicts;
  for (const auto& [t, row] : rows(0, 0)) {
    if (auto v = w.on_row(row, t)) verdicts.push_back(*v);
  }
  REQUIRE(verdicts.size() == 1);
  CHECK(verdicts[0].rank == 1);
  CHECK(verdicts[0].ratio == doctest::Approx((1 / 0.6) / ((1 / 0.2 + 1 / 0.6) / 2)));
  // An earlier attempt's late lines are ignored; a new attempt starts over (its steps from 1 again).
  CHECK_FALSE(w.on_row({-1, 1, 99.0, "loss", 1.0}, 100));
  int again = 0;
  for (const auto& [t, row] : rows(1, 1000)) again += w.on_row(row, t) ? 1 : 0;
  CHECK(again == 1);
}

TEST_CASE(
    "per-epoch step numbers (the ImageNet example's `Epoch: [1][ 10/500]`): a step that goes back is a new epoch") {
  // Regression: the batch index restarts every epoch, and every row at or below the highest step
  // seen was dropped, so a rank 3x slower in epoch 1 was never reported. Through the real extraction
  // of the example's lines with user patterns (--metric step=... --metric loss=...).
  MetricExtractor x({parse_metric_pattern(R"(step=Epoch: \[\d+\]\[\s*(\d+)/\d+\])"),
                     parse_metric_pattern(R"(loss=Loss\s+([0-9.e+-]+))"),
                     parse_metric_pattern(R"(acc1=Acc@1\s+([0-9.]+))")});
  struct Timed {
    double time;
    int rank;
    std::string line;
  };
  std::vector<Timed> lines;
  constexpr int kBatches = 500, kPrintFreq = 10;  // the example's defaults: a line every 10 batches
  double end_of_epoch[2] = {0, 0};
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (int rank : {0, 1}) {
      // Epoch 0: both 0.2 s per printed line; epoch 1: rank 1 takes 0.6 s.
      const double per_line = epoch == 1 && rank == 1 ? 0.6 : 0.2;
      double t = end_of_epoch[rank];
      for (int i = 0; i < kBatches; i += kPrintFreq) {
        t += per_line;
        lines.push_back({t, rank,
                         fmt::format("Epoch: [{}][{:3d}/{}]\tTime  0.215 ( 0.233)\tData  0.001 ( 0.010)\tLoss "
                                     "6.9078e+00 (6.9101e+00)\tAcc@1   0.00 (  0.10)\tAcc@5   0.39 (  0.55)",
                                     epoch, i, kBatches)});
      }
      end_of_epoch[rank] = t;
    }
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Timed& a, const Timed& b) { return a.time < b.time; });
  StragglerWatch w(0.75);
  std::vector<std::pair<double, StragglerVerdict>> verdicts;
  for (const auto& l : lines) {
    for (const auto& row : x.on_line(0, l.rank, l.line)) {
      if (auto v = w.on_row(row, l.time)) verdicts.emplace_back(l.time, *v);
    }
  }
  REQUIRE(verdicts.size() == 1);
  CHECK(verdicts[0].second.rank == 1);
  CHECK(verdicts[0].second.ratio < 0.75);
  CHECK(verdicts[0].first > end_of_epoch[0] - 50 * 0.2);  // in epoch 1, not before
  CHECK(verdicts[0].second.rank_step_s > 0.3);            // its epoch-1 pace (0.6 s) fills the window
}

TEST_CASE("the warning names the rank, its ratio, both step times and the flag") {
  auto text = straggler_warning({1, 0.41, 0.21, 0.52}, 0.75);
  CHECK(text ==
        "rank 1 is a straggler: 0.41× the median step rate (0.52 s/step vs 0.21 s/step) (--straggler-threshold 0.75)");
}

TEST_CASE("--straggler-threshold: a ratio strictly between 0 and 1, or off; anything else says what to give") {
  CHECK(parse_straggler_threshold("0.75") == doctest::Approx(0.75));
  CHECK(parse_straggler_threshold("0.5") == doctest::Approx(0.5));
  CHECK_FALSE(parse_straggler_threshold("off"));
  for (const char* bad : {"0", "1", "1.5", "-0.2", "75"}) {
    auto e = usage_error(bad);
    CHECK(e.find("--straggler-threshold") != std::string::npos);
    CHECK(e.find("strictly between 0 and 1") != std::string::npos);
    CHECK(e.find("off") != std::string::npos);
  }
  for (const char* bad : {"", "abc", "0.5x", "nan", "inf", "OFF "}) {
    auto e = usage_error(bad);
    CHECK(e.find("is not a number") != std::string::npos);
    CHECK(e.find("--straggler-threshold") != std::string::npos);
  }
}
