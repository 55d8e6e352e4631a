#include "common/gpu.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>

namespace ddp::gpu {

GpuCount count_gpus() {
  const char* name = std::getenv("DDP_NVML_LIBRARY");
  if (name == nullptr || *name == '\0') name = "libnvidia-ml.so.1";
  void* lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = ::dlerror();
    return {std::nullopt, fmt::format("cannot load {}: {}", name, err ? err : "unknown error")};
  }
  using InitFn = int (*)();
  using CountFn = int (*)(unsigned*);
  auto init = reinterpret_cast<InitFn>(::dlsym(lib, "nvmlInit_v2"));
  auto count = reinterpret_cast<CountFn>(::dlsym(lib, "nvmlDeviceGetCount_v2"));
  auto shutdown = reinterpret_cast<InitFn>(::dlsym(lib, "nvmlShutdown"));
  GpuCount result;
  if (init == nullptr || count == nullptr || shutdown == nullptr) {
    result.why_not = fmt::format("{} lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlShutdown", name);
  } else if (int rc = init(); rc != 0) {
    result.why_not = fmt::format("nvmlInit_v2 failed with NVML error {}", rc);
  } else {
    unsigned n = 0;
    if (int crc = count(&n); crc != 0) {
      result.why_not = fmt::format("nvmlDeviceGetCount_v2 failed with NVML error {}", crc);
    } else {
      result.count = static_cast<int>(n);
    }
    shutdown();
  }
  ::dlclose(lib);
  return result;
}

}  // namespace ddp::gpu
