// The I/O half of slurm/slurm.hpp: a Slurm node name → an address (DNS, then scontrol).
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "common/exit_status.hpp"
#include "platform/subprocess.hpp"
#include "slurm/slurm.hpp"

extern char** environ;

namespace ddp::slurm {
namespace {

std::optional<std::string> ipv4_of(const std::string& name, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(name.c_str(), nullptr, &hints, &found); rc != 0) {
    why = ::gai_strerror(rc);
    return std::nullopt;
  }
  char text[INET_ADDRSTRLEN] = {};
  const auto* sin = reinterpret_cast<const sockaddr_in*>(found->ai_addr);
  ::inet_ntop(AF_INET, &sin->sin_addr, text, sizeof text);
  ::freeaddrinfo(found);
  return std::string(text);
}

}  // namespace

std::string resolve_node(const std::string& node, std::chrono::milliseconds timeout) {
  std::string dns_why;
  if (auto ip = ipv4_of(node, dns_why)) return *ip;
  auto run = run_command({"scontrol", "-o", "show", "node", node}, timeout, true);
  std::string scontrol_why;
  if (!run.started) {
    scontrol_why = fmt::format("scontrol could not be started: {}", run.start_error);
  } else if (run.timed_out) {
    scontrol_why = fmt::format("`scontrol -o show node {}` gave no answer within {:.0f}s", node,
                               std::chrono::duration<double>(timeout).count());
  } else if (run.exit_code != 0) {
    scontrol_why = fmt::format("`scontrol -o show node {}` {}: {}", node,
                               describe_exit(ExitStatus::of(run.exit_code, run.signal)), run.errors);
  } else if (auto addr = node_addr_from_scontrol(run.output); !addr) {
    scontrol_why = fmt::format("`scontrol -o show node {}` printed no NodeAddr", node);
  } else if (*addr == node) {
    scontrol_why = fmt::format("Slurm's NodeAddr is the name itself");
  } else {
    std::string why;
    if (auto ip = ipv4_of(*addr, why)) return *ip;
    scontrol_why = fmt::format("its NodeAddr {} does not resolve either ({})", *addr, why);
  }
  while (!scontrol_why.empty() && (scontrol_why.back() == '\n' || scontrol_why.back() == ' ')) scontrol_why.pop_back();
  throw UsageError(fmt::format(
      "cannot find the address of Slurm node {} (the store host): DNS says '{}'; {}. Pass --master-addr ADDRESS "
      "of that node",
      node, dns_why, scontrol_why));
}

std::optional<SlurmTopology> topology_from_environment(const ExplicitFlags& given) {
  EnvMap env;
  for (char** e = environ; *e; ++e) {
    std::string_view kv(*e);
    if (auto eq = kv.find('='); eq != std::string_view::npos && kv.rfind(env::kSlurmPrefix, 0) == 0) {
      env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
    }
  }
  auto task = read_slurm_env(env);
  if (!task) return std::nullopt;
  auto topo = plan_from_slurm(*task, given);
  if (topo.master_node) {
    topo.master_addr = resolve_node(*topo.master_node, std::chrono::seconds(30));
    topo.summary += fmt::format(" (store host {} is {})", *topo.master_node, *topo.master_addr);
  }
  if (topo.warning) {
    spdlog::warn("{}", topo.summary);
  } else if (!topo.summary.empty()) {
    spdlog::info("{}", topo.summary);
  }
  return topo;
}

}  // namespace ddp::slurm
