#pragma once
// GPUs through NVML, loaded at run time (platform/shared_library.hpp): the binary has no link-time
// dependency on the NVIDIA driver, and a machine without one simply reports no NVML.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::gpu {

struct GpuCount {
  std::optional<int> count;  // nullopt when NVML is unavailable
  std::string why_not;       // what failed (library missing, init error) when count is empty
};

// The NVML library loaded: $DDP_NVML_LIBRARY, or libnvidia-ml.so.1 (Windows: nvml.dll, which the
// driver installs in System32).
inline constexpr std::string_view kNvmlLibraryVar = "DDP_NVML_LIBRARY";
inline constexpr std::string_view kNvmlLibraryDefault = "libnvidia-ml.so.1";
inline constexpr std::string_view kNvmlLibraryWindows = "nvml.dll";
std::string_view nvml_library_default();  // this OS's: kNvmlLibraryDefault or kNvmlLibraryWindows
std::string nvml_library_name();

GpuCount count_gpus();

struct DeviceSample {
  unsigned util_percent = 0;  // GPU utilisation over the driver's last sample period
  unsigned long long mem_used_bytes = 0;
  unsigned long long mem_total_bytes = 0;
  // The pids with a compute context on it (nvmlDeviceGetComputeRunningProcesses; the host's pids,
  // which in a container are not the ones we see); nullopt when this NVML cannot list them.
  std::optional<std::vector<unsigned>> compute_pids{};
};

// An initialised NVML, kept open for repeated samples (nvmlShutdown and dlclose on destruction).
class Nvml {
 public:
  // nullptr when NVML cannot be loaded or initialised; why_not says what failed.
  static std::unique_ptr<Nvml> open(std::string& why_not);
  ~Nvml();
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  std::optional<int> count() const;
  // device: an index ("0") or a UUID ("GPU-..."), as CUDA_VISIBLE_DEVICES spells it.
  std::optional<DeviceSample> sample(const std::string& device, std::string& why_not) const;

 private:
  struct Api;
  explicit Nvml(std::unique_ptr<Api> api);
  std::unique_ptr<Api> api_;
};

}  // namespace ddp::gpu
