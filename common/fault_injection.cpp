#include "common/fault_injection.hpp"

#ifdef DDP_FAULT_INJECTION
#include <cstdlib>
#include <string>

namespace ddp {

bool fault_armed(std::string_view point) {
  const char* value = std::getenv(std::string(kFaultInjectVariable).c_str());
  std::string_view list = value ? value : "";
  while (!list.empty()) {
    auto comma = list.find(',');
    if (list.substr(0, comma) == point) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace ddp
#endif
