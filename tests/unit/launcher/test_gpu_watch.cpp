#include <doctest/doctest.h>

#include "launcher/hang/gpu_watch_core.hpp"

using namespace ddp::launcher;
using namespace std::chrono_literals;

TEST_CASE("no CUDA_VISIBLE_DEVICES: local rank i uses device i, ranks beyond the devices none") {
  auto d = devices_of_local_ranks(std::nullopt, 3, 2);
  REQUIRE(d.size() == 3);
  CHECK(d[0] == "0");
  CHECK(d[1] == "1");
  CHECK_FALSE(d[2]);
}

TEST_CASE("CUDA_VISIBLE_DEVICES order maps local ranks; an invalid entry ends the list") {
  auto d = devices_of_local_ranks(std::string("3, 1,GPU-abc"), 4, 8);
  CHECK(d[0] == "3");
  CHECK(d[1] == "1");
  CHECK(d[2] == "GPU-abc");
  CHECK_FALSE(d[3]);
  auto cut = devices_of_local_ranks(std::string("2,-1,3"), 2, 8);
  CHECK(cut[0] == "2");
  CHECK_FALSE(cut[1]);
  auto none = devices_of_local_ranks(std::string(""), 2, 8);
  CHECK_FALSE(none[0]);
}

TEST_CASE("the visible devices (the GPU release gate's) are CUDA's reading of the list") {
  CHECK(visible_devices("3, 1,GPU-abc") == std::vector<std::string>{"3", "1", "GPU-abc"});
  CHECK(visible_devices("2,-1,3") == std::vector<std::string>{"2"});
  CHECK(visible_devices("").empty());
}

TEST_CASE("low utilisation for the whole window warns once, with the window's mean") {
  LowUtilDetector d(50, 60s);
  CHECK_FALSE(d.on_sample(0s, 30));
  CHECK_FALSE(d.on_sample(30s, 40));
  auto alert = d.on_sample(60s, 35);
  REQUIRE(alert);
  CHECK(alert->mean_util == doctest::Approx(35));
  CHECK(alert->lasted == 60s);
  CHECK(d.alerted());
  CHECK_FALSE(d.on_sample(120s, 10));
  CHECK_FALSE(d.on_sample(180s, 10));
}

TEST_CASE("a busy sample resets the window") {
  LowUtilDetector d(50, 10s);
  CHECK_FALSE(d.on_sample(0s, 10));
  CHECK_FALSE(d.on_sample(9s, 10));
  CHECK_FALSE(d.on_sample(10s, 50));  // at the threshold is not below it
  CHECK_FALSE(d.on_sample(15s, 10));
  CHECK_FALSE(d.on_sample(24s, 10));
  auto alert = d.on_sample(25s, 10);
  REQUIRE(alert);
  CHECK(alert->lasted == 10s);
}

TEST_CASE("the warning names the GPU, the rank, the level, the time and what to do") {
  auto text = low_util_warning("1", 1, {35.4, 60s});
  CHECK(text.find(
            "GPU 1 (rank 1) at 35 % for 60 s: raise the per-rank batch (--per-rank-batch) or DataLoader workers") == 0);
}

TEST_CASE("dynamic rendezvous: samples and the warning name the current round's global rank") {
  GpuWatchConfig config;
  config.low_util_percent = 50;
  config.low_window = 10s;
  // This node's two local ranks were global ranks 2 and 3 in round 0 (a node before it).
  GpuRankTargets t(devices_of_local_ranks(std::nullopt, 2, 2), {2, 3}, config);
  auto first = t.targets();
  REQUIRE(first.size() == 2);
  CHECK(first[1].rank == 3);
  CHECK(first[1].device == "1");
  CHECK_FALSE(t.on_sample(1, 0s, 10));
  CHECK_FALSE(t.on_sample(1, 8s, 10));
  // Round 1: the node before it left; the same local ranks are now global ranks 0 and 1.
  t.on_round({0, 1});
  auto now = t.targets();
  CHECK(now[0].rank == 0);
  CHECK(now[1].rank == 1);
  CHECK(now[1].device == "1");  // the device stays the node's
  // The restart in between is not the rank's idle time: the window starts again.
  CHECK_FALSE(t.on_sample(1, 12s, 10));
  CHECK_FALSE(t.on_sample(1, 20s, 10));
  auto w = t.on_sample(1, 22s, 10);
  REQUIRE(w);
  CHECK(w->target.rank == 1);
  CHECK(w->alert.lasted == 10s);
  CHECK(w->text.find("GPU 1 (rank 1) at 10 % for 10 s") == 0);
  // Once per local rank for the run, whatever the round.
  t.on_round({4, 5});
  CHECK_FALSE(t.on_sample(1, 40s, 10));
  CHECK_FALSE(t.on_sample(1, 60s, 10));
}

TEST_CASE("targets: only local ranks with a device; a sample of one without is ignored") {
  GpuRankTargets t(devices_of_local_ranks(std::string("5"), 2, 8), {6, 7}, GpuWatchConfig{});
  auto v = t.targets();
  REQUIRE(v.size() == 1);
  CHECK(v[0].local_rank == 0);
  CHECK(v[0].rank == 6);
  CHECK(v[0].device == "5");
  CHECK_FALSE(t.on_sample(1, 0s, 0));
  CHECK_FALSE(t.on_sample(7, 0s, 0));
}
