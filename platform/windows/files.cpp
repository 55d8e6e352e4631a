#include "platform/files.hpp"

// clang-format off
#include <windows.h>
#include <aclapi.h>
#include <sddl.h>
// clang-format on

#include <cstdint>
#include <fstream>
#include <random>
#include <system_error>
#include <vector>

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

ProcessLock lock_for_process_lifetime(const std::filesystem::path& path, std::string& error) {
  // Others may open it (to read the pid that names the holder, to try the lock themselves); the
  // lock is what tells a second daemon no. The handle is not inherited, and is never
  // closed: the kernel releases the lock when this process ends, however it ends.
  HANDLE h = CreateFileW(path.wstring().c_str(), GENERIC_READ | GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE,
                         nullptr, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) {
    const DWORD code = GetLastError();
    if (code == ERROR_SHARING_VIOLATION) return ProcessLock::Busy;
    error = win::error_text(code);
    return ProcessLock::Failed;
  }
  // The lock is on one byte at 4 GiB, past any content: Windows' locks are mandatory, and one on
  // the pid itself would keep a second daemon from reading whose the lock is.
  OVERLAPPED at{};
  at.OffsetHigh = 1;
  if (!LockFileEx(h, LOCKFILE_EXCLUSIVE_LOCK | LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &at)) {
    const DWORD code = GetLastError();
    CloseHandle(h);
    if (code == ERROR_LOCK_VIOLATION || code == ERROR_IO_PENDING) return ProcessLock::Busy;
    error = win::error_text(code);
    return ProcessLock::Failed;
  }
  const auto text = std::to_string(GetCurrentProcessId()) + "\n";
  DWORD written = 0;
  if (SetFilePointer(h, 0, nullptr, FILE_BEGIN) == INVALID_SET_FILE_POINTER || !SetEndOfFile(h) ||
      !WriteFile(h, text.data(), static_cast<DWORD>(text.size()), &written, nullptr) || written != text.size()) {
    error = "cannot record our pid in it: " + win::error_text();
  }
  return ProcessLock::Held;  // h stays open (and locked) for the life of the process
}

namespace {

// "S-1-5-21-…" for a SID, "" for none.
std::string sid_text(PSID sid) {
  if (sid == nullptr || !IsValidSid(sid)) return "";
  LPWSTR text = nullptr;
  if (!ConvertSidToStringSidW(sid, &text)) return "";
  std::string out = win::to_utf8(text);
  LocalFree(text);
  return out;
}

// The owner SID of what `handle` is, as text; "" when unreadable.
std::string owner_of(HANDLE handle) {
  PSID owner = nullptr;
  PSECURITY_DESCRIPTOR descriptor = nullptr;
  if (GetSecurityInfo(handle, SE_FILE_OBJECT, OWNER_SECURITY_INFORMATION, &owner, nullptr, nullptr, nullptr,
                      &descriptor) != ERROR_SUCCESS) {
    return "";
  }
  std::string out = sid_text(owner);
  LocalFree(descriptor);
  return out;
}

// Who this process is: its token's user, and whether it is a member of Administrators.
OwnerPolicy our_policy() {
  OwnerPolicy policy;
  policy.admin_owners = {"S-1-5-32-544", "S-1-5-18"};  // Administrators, LocalSystem
  HANDLE token = nullptr;
  if (OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &token)) {
    win::Handle closer(token);
    DWORD size = 0;
    GetTokenInformation(token, TokenUser, nullptr, 0, &size);
    std::vector<char> buf(size);
    if (size != 0 && GetTokenInformation(token, TokenUser, buf.data(), size, &size)) {
      policy.me = sid_text(reinterpret_cast<TOKEN_USER*>(buf.data())->User.Sid);
    }
  }
  BYTE admins[SECURITY_MAX_SID_SIZE];
  DWORD admins_size = sizeof admins;
  BOOL member = FALSE;
  if (CreateWellKnownSid(WinBuiltinAdministratorsSid, nullptr, admins, &admins_size) &&
      CheckTokenMembership(nullptr, admins, &member)) {
    policy.i_am_admin = member != FALSE;
  }
  return policy;
}

}  // namespace

std::optional<std::string> read_own_file(const std::filesystem::path& path) {
  // FILE_FLAG_OPEN_REPARSE_POINT: a planted link is itself the file, not where it points (and refused).
  win::Handle file(CreateFileW(path.wstring().c_str(), GENERIC_READ | READ_CONTROL,
                               FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                               FILE_ATTRIBUTE_NORMAL | FILE_FLAG_OPEN_REPARSE_POINT, nullptr));
  if (!file) {
    const DWORD error = GetLastError();
    if (error == ERROR_FILE_NOT_FOUND || error == ERROR_PATH_NOT_FOUND) return std::nullopt;
    throw std::system_error(static_cast<int>(error), std::system_category(),
                            "open " + path.string() + ": " + win::error_text(error));
  }
  BY_HANDLE_FILE_INFORMATION info{};
  if (!GetFileInformationByHandle(file.get(), &info) || GetFileType(file.get()) != FILE_TYPE_DISK ||
      (info.dwFileAttributes & (FILE_ATTRIBUTE_DIRECTORY | FILE_ATTRIBUTE_REPARSE_POINT)) != 0) {
    throw ForeignFile(path.string() + ": a link or not a regular file, not a file this run wrote");
  }
  // The directory as it is now, opened without following a link either.
  const auto dir = std::filesystem::absolute(path).parent_path();
  win::Handle dir_handle(CreateFileW(dir.wstring().c_str(), READ_CONTROL,
                                     FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_EXISTING,
                                     FILE_FLAG_BACKUP_SEMANTICS, nullptr));
  const FileOwners owners{owner_of(file.get()), dir_handle ? owner_of(dir_handle.get()) : std::string()};
  static const OwnerPolicy policy = our_policy();
  if (auto problem = foreign_owner(path, owners, policy)) throw ForeignFile(*problem);
  std::string text;
  char buf[65536];
  DWORD n = 0;
  while (ReadFile(file.get(), buf, sizeof buf, &n, nullptr) && n > 0) text.append(buf, n);
  return text;
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
