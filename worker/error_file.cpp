#include "worker/error_file.hpp"

#include <cxxabi.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <system_error>

#include "common/env_contract.hpp"
#include "common/peer_failure.hpp"

namespace ddp::worker {

std::string error_file_json(const ErrorRecord& record) {
  nlohmann::json extra = {{"timestamp", std::to_string(record.timestamp)}};
  if (record.callstack) extra["py_callstack"] = *record.callstack;
  extra[std::string(kPeerFailureField)] = record.peer_failure.value_or(mentions_lost_peer(record.message));
  nlohmann::json j = {{"message", {{"message", record.message}, {"extraInfo", extra}}}};
  // Invalid UTF-8 in an exception message must not turn the report into a second exception.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool write_error_file(const std::string& path, const ErrorRecord& record) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty() || fs::exists(path, ec)) return false;
  fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path(), ec);
  fs::path tmp = target;
  tmp += ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return false;
    out << error_file_json(record) << '\n';
    if (!out.flush()) return false;
  }
  fs::rename(tmp, target, ec);
  if (!ec) return true;
  fs::remove(tmp, ec);
  return false;
}

std::string error_file_from_env() {
  const char* path = std::getenv(std::string(env::kErrorFile).c_str());
  return path ? std::string(path) : std::string();
}

std::string demangle(const char* mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string(mangled);
}

}  // namespace ddp::worker
