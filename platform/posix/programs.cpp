#include "platform/programs.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

namespace ddp::platform {
namespace {

bool executable_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

bool names_a_path(const std::string& program) { return program.find('/') != std::string::npos; }

std::optional<std::string> find_program(const std::string& program) {
  if (program.empty()) return std::nullopt;
  if (names_a_path(program)) return ::access(program.c_str(), X_OK) == 0 ? std::optional(program) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "";
  while (true) {
    auto colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    auto candidate = (std::filesystem::path(dir.empty() ? "." : dir) / program).string();
    if (executable_file(candidate)) return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    dirs.remove_prefix(colon + 1);
  }
}

std::vector<std::string> open_url_command(const std::string& url) { return {"xdg-open", url}; }

std::vector<std::string> shell_command(const std::string& line) { return {"/bin/sh", "-c", line}; }

}  // namespace ddp::platform
