#include "platform/files.hpp"

#include <windows.h>

#include <cstdint>
#include <random>
#include <system_error>

#include "platform/windows/wide.hpp"

namespace ddp::platform {

std::filesystem::path make_unique_directory(const std::filesystem::path& parent, const std::string& prefix) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::random_device rd;
  std::uniform_int_distribution<std::size_t> pick(0, sizeof kChars - 2);
  DWORD error = 0;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = prefix;
    for (int i = 0; i < 6; ++i) name += kChars[pick(rd)];
    const auto dir = std::filesystem::absolute(parent / name);
    if (CreateDirectoryW(dir.wstring().c_str(), nullptr)) return dir;
    error = GetLastError();
    if (error != ERROR_ALREADY_EXISTS) break;
  }
  throw std::system_error(static_cast<int>(error), std::system_category(),
                          "CreateDirectory in " + parent.string() + ": " + win::error_text(error));
}

std::optional<double> file_birth_time(const std::filesystem::path& path) {
  WIN32_FILE_ATTRIBUTE_DATA data{};
  if (!GetFileAttributesExW(path.wstring().c_str(), GetFileExInfoStandard, &data)) return std::nullopt;
  const std::uint64_t ticks =
      (static_cast<std::uint64_t>(data.ftCreationTime.dwHighDateTime) << 32) | data.ftCreationTime.dwLowDateTime;
  constexpr std::uint64_t kEpochTicks = 116444736000000000ULL;  // 1601 → 1970 in 100 ns units
  if (ticks < kEpochTicks) return std::nullopt;
  return static_cast<double>(ticks - kEpochTicks) * 1e-7;
}

}  // namespace ddp::platform
