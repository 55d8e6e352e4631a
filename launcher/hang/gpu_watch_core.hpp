#pragma once
// GPU watch, the pure part: which device each local rank uses, and when a rank's GPU has stayed
// under-used long enough to say so (once).
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/gpu.hpp"

namespace ddp::launcher {

// run --gpu-watch-interval, --gpu-low-util, --gpu-low-window.
struct GpuWatchConfig {
  std::chrono::milliseconds interval{5000};  // 0: off
  unsigned low_util_percent = 50;
  std::chrono::milliseconds low_window{60000};
};

// Local rank i uses the i-th device CUDA_VISIBLE_DEVICES lists (indices or UUIDs), or device i
// when it is unset. Entries after an empty one or "-1" are invisible to CUDA, as are ranks beyond
// the list or beyond device_count (when unset): nullopt, not watched.
std::vector<std::optional<std::string>> devices_of_local_ranks(const std::optional<std::string>& cuda_visible_devices,
                                                               int nproc, int device_count);
// The devices a CUDA_VISIBLE_DEVICES value makes visible, in order (indices or UUIDs, spaces
// trimmed), up to its first empty or "-1" entry, as CUDA reads it.
std::vector<std::string> visible_devices(std::string_view cuda_visible_devices);

// One rank's GPU at one moment, as GpuWatch (gpu_watch.hpp) hands it on.
struct GpuSample {
  int local_rank = 0;
  int rank = 0;
  std::string device;
  gpu::DeviceSample sample;
  double mem_used_mib() const { return static_cast<double>(sample.mem_used_bytes) / (1024.0 * 1024.0); }
  double mem_total_mib() const { return static_cast<double>(sample.mem_total_bytes) / (1024.0 * 1024.0); }
};

struct LowUtilAlert {
  double mean_util = 0;                 // over the samples of the window
  std::chrono::milliseconds lasted{0};  // from the first low sample to this one
};

// Fed one utilisation sample at a time (t: a monotonic time). A sample at or above the threshold
// resets the window; once every sample for `window` was below it, on_sample returns ONE alert and
// never again.
class LowUtilDetector {
 public:
  LowUtilDetector(unsigned threshold_percent, std::chrono::milliseconds window)
      : threshold_(threshold_percent), window_(window) {}

  std::optional<LowUtilAlert> on_sample(std::chrono::milliseconds t, unsigned util_percent);
  bool alerted() const { return alerted_; }
  // Forget the current low stretch (the next low sample starts a new window); an alert stays given.
  void restart_window();

 private:
  unsigned threshold_;
  std::chrono::milliseconds window_;
  std::optional<std::chrono::milliseconds> low_since_;
  double sum_ = 0;
  int samples_ = 0;
  bool alerted_ = false;
};

// "GPU 1 (rank 1) at 35 % for 60 s: raise the per-rank batch (--per-rank-batch) or DataLoader workers"
std::string low_util_warning(const std::string& device, int rank, const LowUtilAlert& alert);

// What the watch samples and how it labels it: local rank i's device (fixed for the run:
// CUDA_VISIBLE_DEVICES is the node's) and the global rank local rank i has in the CURRENT plan.
// Under --rdzv-backend c10d every round re-plans the global ranks (a node that joins or leaves
// shifts them), so samples and warnings follow on_round, not the plan the supervisor started with.
class GpuRankTargets {
 public:
  struct Target {
    int local_rank = 0;
    int rank = 0;  // global, in the current round
    std::string device;
  };
  struct Warning {
    Target target;
    LowUtilAlert alert;
    std::string text;  // low_util_warning for the target's current rank
  };

  // devices: devices_of_local_ranks(); ranks[i]: local rank i's global rank.
  GpuRankTargets(std::vector<std::optional<std::string>> devices, std::vector<int> ranks, GpuWatchConfig config);

  // The ranks of a new round. A rank's low-utilisation window starts again (the group restarted in
  // between: its idle time is not the rank's); a warning already given is not repeated.
  void on_round(std::vector<int> ranks);

  // The local ranks that have a device, with their current labels.
  std::vector<Target> targets() const;
  // One utilisation sample of local rank `local` (t: monotonic); the warning, once, naming its rank now.
  std::optional<Warning> on_sample(int local, std::chrono::milliseconds t, unsigned util_percent);

 private:
  Target target(std::size_t local) const;

  std::vector<std::optional<std::string>> devices_;
  std::vector<int> ranks_;
  GpuWatchConfig config_;
  std::vector<LowUtilDetector> detectors_;
};

}  // namespace ddp::launcher
