#include "common/gpu.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "platform/host.hpp"
#include "platform/shared_library.hpp"

namespace ddp::gpu {
namespace {
// The NVML ABI we use (nvml.h): return codes are ints (0 = success), devices opaque pointers.
using Device = void*;
struct Utilization {
  unsigned gpu;
  unsigned memory;
};
struct Memory {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
// nvmlProcessInfo_t of the _v2/_v3 calls (nvml.h since CUDA 11): pid, used memory, MIG instance ids.
struct ProcessInfo {
  unsigned pid;
  unsigned long long used_gpu_memory;
  unsigned gpu_instance_id;
  unsigned compute_instance_id;
};
constexpr int kInsufficientSize = 7;  // NVML_ERROR_INSUFFICIENT_SIZE
}  // namespace

struct Nvml::Api {
  void* lib = nullptr;
  int (*shutdown)() = nullptr;
  int (*count)(unsigned*) = nullptr;
  int (*by_index)(unsigned, Device*) = nullptr;
  int (*by_uuid)(const char*, Device*) = nullptr;
  int (*utilization)(Device, Utilization*) = nullptr;
  int (*memory)(Device, Memory*) = nullptr;
  int (*compute_processes)(Device, unsigned*, ProcessInfo*) = nullptr;
  const char* (*error_string)(int) = nullptr;

  std::string error(const char* call, int rc) const {
    const char* text = error_string ? error_string(rc) : nullptr;
    return fmt::format("{} failed with NVML error {}{}{}", call, rc, text ? ": " : "", text ? text : "");
  }
};

std::string_view nvml_library_default() {
  return platform::this_os() == platform::Os::Windows ? kNvmlLibraryWindows : kNvmlLibraryDefault;
}

std::string nvml_library_name() {
  const char* name = std::getenv(std::string(kNvmlLibraryVar).c_str());
  if (name && *name) return name;
  return std::string(nvml_library_default());
}

std::unique_ptr<Nvml> Nvml::open(std::string& why_not) {
  auto name = nvml_library_name();
  std::string error;
  void* lib = platform::open_library(name, error);
  if (lib == nullptr) {
    why_not = fmt::format("cannot load {}: {}", name, error);
    return nullptr;
  }
  auto api = std::make_unique<Api>();
  api->lib = lib;
  auto sym = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(platform::library_symbol(lib, symbol));
  };
  int (*init)() = nullptr;
  sym(init, "nvmlInit_v2");
  sym(api->shutdown, "nvmlShutdown");
  sym(api->count, "nvmlDeviceGetCount_v2");
  sym(api->by_index, "nvmlDeviceGetHandleByIndex_v2");
  sym(api->by_uuid, "nvmlDeviceGetHandleByUUID");
  sym(api->utilization, "nvmlDeviceGetUtilizationRates");
  sym(api->memory, "nvmlDeviceGetMemoryInfo");
  sym(api->error_string, "nvmlErrorString");
  sym(api->compute_processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  if (!api->compute_processes) sym(api->compute_processes, "nvmlDeviceGetComputeRunningProcesses_v2");
  if (!init || !api->shutdown || !api->count) {
    why_not = fmt::format("{} lacks nvmlInit_v2/nvmlDeviceGetCount_v2/nvmlShutdown", name);
    platform::close_library(lib);
    return nullptr;
  }
  if (int rc = init(); rc != 0) {
    why_not = api->error("nvmlInit_v2", rc);
    platform::close_library(lib);
    return nullptr;
  }
  return std::unique_ptr<Nvml>(new Nvml(std::move(api)));
}

Nvml::Nvml(std::unique_ptr<Api> api) : api_(std::move(api)) {}

Nvml::~Nvml() {
  api_->shutdown();
  platform::close_library(api_->lib);
}

std::optional<int> Nvml::count() const {
  unsigned n = 0;
  if (api_->count(&n) != 0) return std::nullopt;
  return static_cast<int>(n);
}

std::optional<DeviceSample> Nvml::sample(const std::string& device, std::string& why_not) const {
  if (!api_->by_index || !api_->utilization || !api_->memory) {
    why_not = "this NVML lacks nvmlDeviceGetHandleByIndex_v2/nvmlDeviceGetUtilizationRates/nvmlDeviceGetMemoryInfo";
    return std::nullopt;
  }
  Device handle = nullptr;
  bool numeric = !device.empty() && device.find_first_not_of("0123456789") == std::string::npos;
  if (numeric) {
    if (int rc = api_->by_index(static_cast<unsigned>(std::stoul(device)), &handle); rc != 0) {
      why_not = api_->error("nvmlDeviceGetHandleByIndex_v2", rc);
      return std::nullopt;
    }
  } else if (!api_->by_uuid) {
    why_not = "this NVML lacks nvmlDeviceGetHandleByUUID";
    return std::nullopt;
  } else if (int rc = api_->by_uuid(device.c_str(), &handle); rc != 0) {
    why_not = api_->error("nvmlDeviceGetHandleByUUID", rc);
    return std::nullopt;
  }
  Utilization u{};
  if (int rc = api_->utilization(handle, &u); rc != 0) {
    why_not = api_->error("nvmlDeviceGetUtilizationRates", rc);
    return std::nullopt;
  }
  Memory m{};
  if (int rc = api_->memory(handle, &m); rc != 0) {
    why_not = api_->error("nvmlDeviceGetMemoryInfo", rc);
    return std::nullopt;
  }
  DeviceSample sample{u.gpu, m.used, m.total};
  if (api_->compute_processes) {
    std::vector<ProcessInfo> infos(256);
    auto n = static_cast<unsigned>(infos.size());
    int rc = api_->compute_processes(handle, &n, infos.data());
    if (rc == kInsufficientSize && n > infos.size()) {  // more contexts than guessed: ask again with room
      infos.resize(n + 16);
      n = static_cast<unsigned>(infos.size());
      rc = api_->compute_processes(handle, &n, infos.data());
    }
    if (rc == 0) {
      sample.compute_pids.emplace();
      for (unsigned i = 0; i < n && i < infos.size(); ++i) sample.compute_pids->push_back(infos[i].pid);
    }
  }
  return sample;
}

GpuCount count_gpus() {
  GpuCount result;
  auto nvml = Nvml::open(result.why_not);
  if (!nvml) return result;
  result.count = nvml->count();
  if (!result.count) result.why_not = "nvmlDeviceGetCount_v2 failed";
  return result;
}

}  // namespace ddp::gpu
