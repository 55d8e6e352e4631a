#include "platform/files.hpp"

#include <windows.h>

#include <fstream>
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

bool write_private_file(const std::filesystem::path& path, const std::string& content, std::string& error) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.flush();
  if (!out) error = "cannot write it";
  return static_cast<bool>(out);
}

ProcessLock lock_for_process_lifetime(const std::filesystem::path&, std::string& error) {
  error = "the job daemon is not on Windows yet (issue 27)";
  return ProcessLock::Failed;
}

}  // namespace ddp::platform
