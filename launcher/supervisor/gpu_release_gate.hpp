#pragma once
// The health gate before a restart (`--gpu-release-timeout`): the next attempt is spawned only once
// the failed attempt's GPU memory is free, or the bound passed. A rank SIGKILLed mid-step leaves
// its CUDA context to the driver, which frees it some time after the pid is reaped; spawning into
// that memory gives the new ranks an out-of-memory error instead of a restart.
//
// A device is released when no pid of the dead ranks holds a compute context on it
// (nvmlDeviceGetComputeRunningProcesses) and its memory in use is back to at most its level before
// the run plus kGpuReleaseSlackBytes. Both: in a container NVML lists the host's pids, which never
// match ours, and the memory level is the evidence left. When the bound passes first the restart
// goes ahead, with a warning naming the devices still held (a restart that fails for memory is
// charged like any other; stopping here would end jobs whose memory was only slow to free).
//
// gpu_release_verdict is the pure decision (unit-tested); GpuReleaseGate polls NVML on the loop.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ddp::gpu {
class Nvml;
}

namespace ddp::launcher {

inline constexpr unsigned long long kGpuReleaseSlackBytes = 256ull << 20;

struct GpuMemoryNow {
  std::string device;  // "0", or a UUID as CUDA_VISIBLE_DEVICES names it
  unsigned long long used_bytes = 0;
  std::optional<std::vector<unsigned>> pids{};  // compute contexts; nullopt: NVML cannot list them
};

struct GpuReleaseVerdict {
  bool released = true;
  std::vector<std::string> held;  // per device still held: "GPU 0: pid 4242 holds a context"
};

// baseline_used: each device's memory in use before the run (missing: not sampled then).
GpuReleaseVerdict gpu_release_verdict(const std::vector<GpuMemoryNow>& now,
                                      const std::map<std::string, unsigned long long>& baseline_used,
                                      const std::vector<unsigned>& dead_pids,
                                      unsigned long long slack_bytes = kGpuReleaseSlackBytes);

// The shell: NVML opened at construction (no NVML, no GPUs: the gate is off and waits for nothing).
class GpuReleaseGate {
 public:
  struct Outcome {
    bool gated = false;    // NVML was there: the gate looked
    bool released = true;  // false: the bound passed first
    double waited_s = 0;
    std::vector<std::string> held;
  };
  // devices: CUDA_VISIBLE_DEVICES' entries, or nullopt for every device NVML counts.
  GpuReleaseGate(boost::asio::io_context& io, std::chrono::milliseconds timeout,
                 const std::optional<std::string>& cuda_visible_devices);
  ~GpuReleaseGate();
  bool enabled() const { return nvml_ != nullptr; }
  // Calls done once every device is released or `timeout` passed (at once when the gate is off).
  void wait(std::vector<unsigned> dead_pids, std::function<void(const Outcome&)> done);
  void cancel();

 private:
  std::vector<GpuMemoryNow> sample() const;
  void poll();

  boost::asio::steady_timer timer_;
  std::chrono::milliseconds timeout_;
  std::unique_ptr<gpu::Nvml> nvml_;
  std::vector<std::string> devices_;
  std::map<std::string, unsigned long long> baseline_;
  std::vector<unsigned> dead_pids_;
  std::function<void(const Outcome&)> done_;
  std::chrono::steady_clock::time_point started_;
};

}  // namespace ddp::launcher
