#include "platform/file_lock.hpp"

#include <windows.h>

#include <utility>

#include "platform/windows/wide.hpp"

namespace ddp::platform {
namespace {

FileIdentity identity_of(HANDLE h) {
  BY_HANDLE_FILE_INFORMATION info{};
  if (!GetFileInformationByHandle(h, &info)) return {};
  return FileIdentity{info.dwVolumeSerialNumber, (std::uint64_t{info.nFileIndexHigh} << 32) | info.nFileIndexLow};
}

HANDLE open_shared(const std::filesystem::path& path) {
  // Sharing everything: its users go on reading, writing and (torch) recreating it meanwhile.
  return CreateFileW(path.wstring().c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
                     nullptr, OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
}

}  // namespace

std::optional<FileIdentity> file_identity(const std::filesystem::path& path) {
  win::Handle h(open_shared(path));
  if (!h) return std::nullopt;
  return identity_of(h.get());
}

std::optional<LockableFile> LockableFile::open(const std::filesystem::path& path, std::string& error) {
  HANDLE h = open_shared(path);
  if (h == INVALID_HANDLE_VALUE) {
    error = win::error_text();
    return std::nullopt;
  }
  return LockableFile(h);
}

FileIdentity LockableFile::identity() const { return identity_of(handle_); }

std::optional<std::size_t> LockableFile::read_at(std::uint64_t offset, char* buf, std::size_t size,
                                                 std::string& error) const {
  OVERLAPPED where{};  // a positional read: at `offset`, whatever the handle's own offset
  where.Offset = static_cast<DWORD>(offset);
  where.OffsetHigh = static_cast<DWORD>(offset >> 32);
  DWORD n = 0;
  if (!ReadFile(handle_, buf, static_cast<DWORD>(size), &n, &where)) {
    const DWORD code = GetLastError();
    if (code == ERROR_HANDLE_EOF) return 0;
    error = win::error_text(code);
    return std::nullopt;
  }
  return n;
}

LockableFile::TryLock LockableFile::try_lock_exclusive() {
  OVERLAPPED byte_zero{};  // torch's flock emulation: LockFileEx(…, 1, 0, {offset 0})
  if (LockFileEx(handle_, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &byte_zero)) {
    return TryLock::Locked;
  }
  return GetLastError() == ERROR_LOCK_VIOLATION ? TryLock::Busy : TryLock::Failed;
}

RemoveResult remove_file(const std::filesystem::path& path) {
  if (DeleteFileW(path.wstring().c_str())) return {true, false, ""};
  const DWORD code = GetLastError();
  return {false, code == ERROR_SHARING_VIOLATION, win::error_text(code)};
}

bool lock_holders_visible() { return false; }

}  // namespace ddp::platform
