#pragma once
// GPUs through NVML, loaded with dlopen at run time: the binary has no link-time dependency on
// the NVIDIA driver, and a machine without one simply reports no NVML.
#include <optional>
#include <string>

namespace ddp::gpu {

struct GpuCount {
  std::optional<int> count;  // nullopt when NVML is unavailable
  std::string why_not;       // what failed (library missing, init error) when count is empty
};

// $DDP_NVML_LIBRARY, or libnvidia-ml.so.1.
GpuCount count_gpus();

}  // namespace ddp::gpu
