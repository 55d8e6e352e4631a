#pragma once
// GpuWatch: samples each local rank's GPU (utilisation, memory) every interval with an Asio timer
// on the supervisor's loop (NVML calls are fast, no thread), hands the samples on, and warns once
// per rank whose GPU stays under the threshold for the window. Off when NVML is absent.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/gpu.hpp"
#include "launcher/hang/gpu_watch_core.hpp"

namespace ddp::launcher {

class GpuWatch {
 public:
  using SampleFn = std::function<void(const GpuSample&)>;
  using WarnFn = std::function<void(const GpuSample&, const LowUtilAlert&, const std::string& text)>;

  // ranks[i]: global rank of local rank i; cuda_visible_devices: the workers' CUDA_VISIBLE_DEVICES.
  GpuWatch(boost::asio::io_context& io, GpuWatchConfig config, std::vector<int> ranks,
           std::optional<std::string> cuda_visible_devices, SampleFn on_sample, WarnFn on_low);
  ~GpuWatch();

  // Starts sampling (once; later calls do nothing). Under dynamic rendezvous the supervisor calls it
  // after the first round's on_round, so no sample carries a rank from before any plan.
  void start();
  void stop();
  // Dynamic rendezvous: the global ranks of the new round (ranks[i]: local rank i's); samples and
  // warnings name these from now on.
  void on_round(std::vector<int> ranks);

 private:
  void arm();
  void sample_all();

  boost::asio::steady_timer timer_;
  GpuWatchConfig config_;
  std::vector<int> ranks_;
  std::optional<std::string> cuda_visible_devices_;
  SampleFn on_sample_;
  WarnFn on_low_;
  std::unique_ptr<gpu::Nvml> nvml_;
  std::optional<GpuRankTargets> targets_;  // once started with NVML and a GPU for some local rank
  std::vector<bool> failing_;              // a device whose sampling failed: said once, retried quietly
  std::chrono::steady_clock::time_point t0_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace ddp::launcher
