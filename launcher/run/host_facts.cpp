// Shell of launcher/run/host_facts.hpp: the facts every platform gathers the same way (platform/host.hpp);
// the lookups differ (host_lookups_linux.cpp, host_lookups_windows.cpp).
#include "launcher/run/host_facts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <thread>

#include "platform/host.hpp"

namespace ddp::launcher {

HostFacts gather_host_facts() {
  HostFacts f;
  for (auto& [k, v] : platform::environment()) f.env[k] = v;
  f.cpu_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  f.hostname = platform::host_name();
  std::error_code ec;
  f.temp_dir = std::filesystem::temp_directory_path(ec);
  if (ec) f.temp_dir = "/tmp";
  f.pid = static_cast<int>(platform::current_pid());
  std::random_device rd;
  f.random_id = fmt::format("{:08x}", rd());
  f.windows = platform::this_os() == platform::Os::Windows;
  add_host_lookups(f);
  return f;
}

}  // namespace ddp::launcher
