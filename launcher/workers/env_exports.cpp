#include "launcher/workers/env_exports.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "common/net.hpp"

namespace ddp::launcher {
namespace {

// POSIX single quotes: everything literal; a ' is closed, escaped and reopened.
std::string sh_quote(const std::string& v) {
  bool plain = !v.empty();
  for (char c : v) {
    plain = plain &&
            (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' || c == ':' || c == '/');
  }
  if (plain) return v;
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// PowerShell single quotes: everything literal; a ' is doubled.
std::string powershell_quote(const std::string& v) {
  std::string out = "'";
  for (char c : v) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

}  // namespace

std::vector<EnvExport> env_exports(const EnvExportsInput& in) {
  if (in.master_addr.empty())
    throw UsageError("--store HOST:PORT: no host; give the store's address, e.g. 127.0.0.1:29500");
  if (in.master_port == 0) {
    throw UsageError("--store HOST:PORT: give the port the store listens on (`ddp-launch store --port 0` prints it)");
  }
  if (in.world_size < 1)
    throw UsageError(fmt::format("--world-size {} is not a positive number of ranks", in.world_size));
  if (in.rank < 0 || in.rank >= in.world_size) {
    throw UsageError(
        fmt::format("--rank {} is outside 0..{} (--world-size {})", in.rank, in.world_size - 1, in.world_size));
  }
  const int local_world = in.local_world_size < 0 ? in.world_size : in.local_world_size;
  const int local_rank = in.local_rank < 0 ? in.rank : in.local_rank;
  if (local_world < 1 || local_world > in.world_size) {
    throw UsageError(fmt::format("--local-world-size {} is outside 1..{} (--world-size)", local_world, in.world_size));
  }
  if (local_rank >= local_world) {
    throw UsageError(
        fmt::format("--local-rank {} is outside 0..{}: give --local-rank (and --local-world-size "
                    "for several nodes)",
                    local_rank, local_world - 1));
  }
  if (in.restart_count < 0) throw UsageError(fmt::format("--restart-count {} is negative", in.restart_count));
  auto s = [](std::string_view v) { return std::string(v); };
  return {
      {s(env::kMasterAddr), in.master_addr, "the store's host"},
      {s(env::kMasterPort), std::to_string(in.master_port), "the store's port"},
      {s(env::kWorldSize), std::to_string(in.world_size), "ranks in the job"},
      {s(env::kRank), std::to_string(in.rank), "this process's rank"},
      {s(env::kLocalRank), std::to_string(local_rank), "its rank on this machine (e.g. its GPU)"},
      {s(env::kLocalWorldSize), std::to_string(local_world), "ranks on this machine"},
      {s(env::kUseAgentStore), "True",
       "torch-internal: the store already runs, so rank 0 connects to it instead of binding MASTER_PORT"},
      {s(env::kRestartCount), std::to_string(in.restart_count),
       "torch-internal: read when the one above is True; keys go under /worker/attempt_<n>/"},
  };
}

void set_store_address(EnvExportsInput& in, std::string_view address) {
  auto bad = [&](std::string_view why) {
    return UsageError(
        fmt::format("--store '{}': {}; give HOST:PORT, e.g. 127.0.0.1:29500 (the port `ddp-launch "
                    "store` printed)",
                    address, why));
  };
  auto parsed = net::parse_host_port(address);
  if (!parsed.value) throw bad(parsed.problem);
  in.master_addr = parsed.value->host;
  in.master_port = *parsed.value->port;
}

std::string render_sh_exports(const std::vector<EnvExport>& exports) {
  std::size_t width = 0;
  for (const auto& e : exports) width = std::max(width, e.name.size() + sh_quote(e.value).size());
  std::string out;
  for (const auto& e : exports) {
    auto assign = fmt::format("{}={}", e.name, sh_quote(e.value));
    out += fmt::format("export {:<{}}  # {}\n", assign, width + 1, e.why);
  }
  return out;
}

std::string render_cmd_exports(const std::vector<EnvExport>& exports) {
  std::string out;
  for (const auto& e : exports) {
    if (e.value.find_first_of("\"%^!\r\n") != std::string::npos) {
      throw UsageError(
          fmt::format("{}='{}' cannot be written for cmd.exe (its \", %, ^, ! or line break would be read as syntax); "
                      "give --shell powershell",
                      e.name, e.value));
    }
    // The comment's < > | & would be redirections or pipes where a batch file parses a rem line.
    std::string why = e.why;
    std::replace(why.begin(), why.end(), '<', '(');
    std::replace(why.begin(), why.end(), '>', ')');
    std::replace(why.begin(), why.end(), '|', '/');
    std::replace(why.begin(), why.end(), '&', '+');
    out += fmt::format("rem {}\nset \"{}={}\"\n", why, e.name, e.value);
  }
  return out;
}

std::string render_powershell_exports(const std::vector<EnvExport>& exports) {
  std::size_t width = 0;
  for (const auto& e : exports) width = std::max(width, e.name.size() + powershell_quote(e.value).size());
  std::string out;
  for (const auto& e : exports) {
    auto assign = fmt::format("{} = {}", e.name, powershell_quote(e.value));
    out += fmt::format("$env:{:<{}}  # {}\n", assign, width + 3, e.why);
  }
  return out;
}

}  // namespace ddp::launcher
