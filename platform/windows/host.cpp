#include "platform/host.hpp"

// windows.h before bcrypt.h, which needs its types.
// clang-format off
#include <windows.h>
#include <bcrypt.h>
// clang-format on

#include <system_error>

#include "platform/arguments.hpp"
// After windows.h:
#include <shellapi.h>

#include "platform/windows/wide.hpp"

namespace ddp::platform {

Os this_os() { return Os::Windows; }

pid_t current_pid() { return static_cast<pid_t>(GetCurrentProcessId()); }

std::string host_name() {
  wchar_t name[256] = {};
  DWORD size = 255;
  return GetComputerNameExW(ComputerNameDnsHostname, name, &size) ? win::to_utf8(std::wstring_view(name, size))
                                                                  : std::string();
}

std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  wchar_t* block = GetEnvironmentStringsW();
  if (!block) return env;
  for (const wchar_t* e = block; *e; e += wcslen(e) + 1) {
    std::string kv = win::to_utf8(e);
    // Entries such as "=C:=C:\work" (the drives' current directories) have no name: not variables.
    auto eq = kv.find('=', 1);
    if (kv.front() != '=' && eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  FreeEnvironmentStringsW(block);
  return env;
}

std::filesystem::path executable_path() {
  std::wstring buf(32768, L'\0');
  const DWORD n = GetModuleFileNameW(nullptr, buf.data(), static_cast<DWORD>(buf.size()));
  return n ? std::filesystem::path(buf.substr(0, n)) : std::filesystem::path();
}

bool stdin_is_terminal() {
  DWORD mode = 0;
  return GetConsoleMode(GetStdHandle(STD_INPUT_HANDLE), &mode) != 0;
}

std::string random_bytes(std::size_t n) {
  std::string bytes(n, '\0');
  auto status = BCryptGenRandom(nullptr, reinterpret_cast<PUCHAR>(bytes.data()), static_cast<ULONG>(bytes.size()),
                                BCRYPT_USE_SYSTEM_PREFERRED_RNG);
  if (status != 0) throw std::system_error(static_cast<int>(status), std::system_category(), "BCryptGenRandom");
  return bytes;
}

std::vector<std::string> utf8_arguments(int argc, char** argv) {
  int n = 0;
  LPWSTR* wide = CommandLineToArgvW(GetCommandLineW(), &n);
  // The same count as the C runtime's argv, or that argv (a caller that built its own).
  if (!wide || n != argc) {
    if (wide) LocalFree(wide);
    return {argv, argv + argc};
  }
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) out.push_back(win::to_utf8(wide[i]));
  LocalFree(wide);
  return out;
}

void use_utf8_console() { SetConsoleOutputCP(CP_UTF8); }

}  // namespace ddp::platform
