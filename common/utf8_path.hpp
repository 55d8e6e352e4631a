#pragma once
// UTF-8 text ⇄ std::filesystem::path, the same on every OS. Our strings (arguments, JSON, YAML,
// environment) are UTF-8; std::filesystem::path's std::string constructor reads the C library's
// narrow encoding instead, which on Windows is the ANSI code page (an é or a 中 in a path turns
// into another file's name, or '?'). Through char8_t both directions are UTF-8 everywhere; on
// POSIX they copy the bytes as they are.
#include <filesystem>
#include <string>
#include <string_view>

namespace ddp {

inline std::filesystem::path utf8_path(std::string_view utf8) {
  return std::filesystem::path(std::u8string(utf8.begin(), utf8.end()));
}

inline std::string utf8_of(const std::filesystem::path& path) {
  const auto u = path.u8string();
  return std::string(u.begin(), u.end());
}

}  // namespace ddp
