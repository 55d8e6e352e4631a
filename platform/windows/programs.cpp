#include "platform/programs.hpp"

#include <cstdlib>
#include <filesystem>
#include <string_view>
#include <vector>

namespace ddp::platform {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  while (true) {
    auto at = text.find(sep);
    if (!text.substr(0, at).empty()) out.emplace_back(text.substr(0, at));
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + 1);
  }
}

std::vector<std::string> extensions() {
  const char* pathext = std::getenv("PATHEXT");
  auto exts = split(pathext && *pathext ? pathext : ".COM;.EXE;.BAT;.CMD", ';');
  return exts;
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

// The name as given when it has an extension and exists, else with each $PATHEXT extension.
std::optional<std::string> with_extension(const fs::path& base) {
  if (base.has_extension() && is_file(base)) return fs::absolute(base).string();
  for (const auto& ext : extensions()) {
    fs::path candidate = base;
    candidate += ext;
    if (is_file(candidate)) return fs::absolute(candidate).string();
  }
  return std::nullopt;
}

}  // namespace

bool names_a_path(const std::string& program) {
  return program.find_first_of("\\/") != std::string::npos || (program.size() >= 2 && program[1] == ':');
}

std::optional<std::string> find_program(const std::string& program) {
  if (program.empty()) return std::nullopt;
  if (names_a_path(program)) return with_extension(fs::path(program));
  // Windows looks in the current directory first (CreateProcess does too), then $PATH.
  std::vector<std::string> dirs{"."};
  if (const char* path = std::getenv("PATH")) {
    for (auto& d : split(path, ';')) dirs.push_back(std::move(d));
  }
  for (const auto& dir : dirs) {
    if (auto found = with_extension(fs::path(dir) / program)) return found;
  }
  return std::nullopt;
}

std::vector<std::string> open_url_command(const std::string& url) {
  return {"rundll32.exe", "url.dll,FileProtocolHandler", url};
}

std::vector<std::string> shell_command(const std::string& line) { return {"cmd.exe", "/c", line}; }

}  // namespace ddp::platform
