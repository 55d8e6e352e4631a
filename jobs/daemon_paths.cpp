#include "jobs/daemon_paths.hpp"

#include <cstdlib>
#include <string>

#include "common/env_contract.hpp"

namespace ddp::jobs {

namespace {
const char* env_or_null(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  return v && *v ? v : nullptr;
}
}  // namespace

std::filesystem::path default_state_dir() {
  if (const char* x = env_or_null(env::kXdgStateHome)) return std::filesystem::path(x) / "ddp-launch";
  if (const char* home = env_or_null(env::kHome)) return std::filesystem::path(home) / ".local/state/ddp-launch";
  return std::filesystem::temp_directory_path() / "ddp-launch-state";
}

std::filesystem::path default_socket_path(const std::filesystem::path& state_dir) {
  if (const char* s = env_or_null(env::kDaemonSocket)) return s;
  if (const char* x = env_or_null(env::kXdgRuntimeDir)) return std::filesystem::path(x) / "ddp-launch" / "daemon.sock";
  return state_dir / "daemon.sock";
}

}  // namespace ddp::jobs
