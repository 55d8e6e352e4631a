// Shell of launcher/host_facts.hpp.
#include "launcher/host_facts.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <random>
#include <thread>

#include "common/env_contract.hpp"
#include "common/gpu.hpp"
#include "common/net.hpp"
#include "launcher/slurm.hpp"

extern char** environ;

namespace ddp::launcher {

HostFacts gather_host_facts() {
  HostFacts f;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) f.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  f.cpu_count = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) f.hostname = name;
  std::error_code ec;
  f.temp_dir = std::filesystem::temp_directory_path(ec);
  if (ec) f.temp_dir = "/tmp";
  f.pid = static_cast<int>(::getpid());
  std::random_device rd;
  f.random_id = fmt::format("{:08x}", rd());
  f.count_gpus = [] {
    auto gpus = gpu::count_gpus();
    return std::pair{gpus.count, gpus.why_not};
  };
  f.hostname_is_loopback = [] { return net::hostname_is_loopback(); };
  f.interface_towards = [](const std::string& host, std::uint16_t port) { return net::interface_towards(host, port); };
  f.resolve_slurm_node = [](const std::string& node) { return slurm::resolve_node(node, std::chrono::seconds(30)); };
  return f;
}

}  // namespace ddp::launcher
