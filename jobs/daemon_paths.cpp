#include "jobs/daemon_paths.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "platform/files.hpp"

namespace ddp::jobs {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
const char* env_or_null(std::string_view name) {
  const char* v = std::getenv(std::string(name).c_str());
  return v && *v ? v : nullptr;
}
}  // namespace

fs::path default_state_dir() {
  if (const char* x = env_or_null(env::kXdgStateHome)) return fs::path(x) / "ddp-launch";
  if (const char* local = env_or_null(env::kLocalAppData)) return fs::path(local) / "ddp-launch";
  if (const char* home = env_or_null(env::kHome)) return fs::path(home) / ".local/state/ddp-launch";
  return fs::temp_directory_path() / "ddp-launch-state";
}

fs::path default_socket_path(const fs::path& state_dir) {
  if (const char* s = env_or_null(env::kDaemonSocket)) return s;
  if (const char* x = env_or_null(env::kXdgRuntimeDir)) return fs::path(x) / "ddp-launch" / "daemon.sock";
  return state_dir / "daemon.sock";
}

fs::path api_file(const fs::path& state_dir) { return state_dir / "api.json"; }

void write_api_file(const fs::path& file, const PublishedApi& api) {
  json j{{"pid", api.pid}, {"unix", nullptr}, {"tcp", nullptr}};
  if (api.socket) j["unix"] = api.socket->string();
  if (api.tcp) j["tcp"] = {{"host", api.tcp->host}, {"port", api.tcp->port}};
  // Written beside and renamed over: a client never reads half of it.
  const auto partial = fs::path(file.string() + ".partial");
  std::string why;
  if (!platform::write_private_file(partial, j.dump() + "\n", why)) {
    throw Error(fmt::format("cannot write {}: {}", partial.string(), why));
  }
  std::error_code ec;
  fs::rename(partial, file, ec);
  if (ec) throw Error(fmt::format("cannot rename {} to {}: {}", partial.string(), file.string(), ec.message()));
}

std::optional<PublishedApi> read_api_file(const fs::path& file) {
  auto text = platform::read_own_file(file);
  if (!text) return std::nullopt;
  try {
    auto j = json::parse(*text);
    PublishedApi api;
    api.pid = j.at("pid").get<pid_t>();
    if (j.at("unix").is_string()) api.socket = fs::path(j["unix"].get<std::string>());
    if (j.at("tcp").is_object()) {
      api.tcp = TcpAddress{j["tcp"].at("host").get<std::string>(), j["tcp"].at("port").get<std::uint16_t>()};
      if (api.tcp->host == "0.0.0.0") api.tcp->host = "127.0.0.1";
      if (api.tcp->host == "::") api.tcp->host = "::1";
    }
    return api;
  } catch (const json::exception& e) {
    throw Error(
        fmt::format("{} is not the daemon's api.json ({}); remove it and restart the daemon", file.string(), e.what()));
  }
}

std::string read_token(const fs::path& state_dir) {
  const auto file = state_dir / "token";
  auto text = platform::read_own_file(file);
  if (!text)
    throw Error(
        fmt::format("no API token in {}: start the daemon with --state-dir {}", file.string(), state_dir.string()));
  auto token = text->substr(0, text->find_first_of("\r\n"));
  if (token.empty()) throw Error(fmt::format("{} is empty: remove it and restart the daemon", file.string()));
  return token;
}

}  // namespace ddp::jobs
