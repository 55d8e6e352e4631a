// SupervisorConfig's pure members (the config is built by launcher/run_options.cpp, in the core).
#include <algorithm>

#include "launcher/supervisor.hpp"

namespace ddp::launcher {

const char* store_mode_name(StoreMode mode) {
  switch (mode) {
    case StoreMode::Agent: return "agent";
    case StoreMode::Rank0: return "rank0";
    case StoreMode::File: return "file";
  }
  return "?";
}

bool SupervisorConfig::writes_log_files() const {
  auto any = [](const std::vector<int>& masks) {
    return std::any_of(masks.begin(), masks.end(), [](int m) { return m != 0; });
  };
  // torchrun's rule: a stream gets a file when redirected or teed; the filtered logs are files too.
  return any(redirects) || any(tee) || duplicate_filters.any();
}

}  // namespace ddp::launcher
