#pragma once
// GPU watch, the pure part: which device each local rank uses, and when a rank's GPU has stayed
// under-used long enough to say so (once).
#include <chrono>
#include <optional>
#include <string>
#include <vector>

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

}  // namespace ddp::launcher
