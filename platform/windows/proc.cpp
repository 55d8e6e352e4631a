// platform/proc.hpp on Windows: Toolhelp (parents), the PEB (command lines), GetExtendedTcpTable
// (ports), the Restart Manager (who has a file open), the system's handle table (what a process has open).
#include "platform/proc.hpp"

// The Windows headers need this order (winsock2 and windows.h before the rest).
// clang-format off
#include <winsock2.h>
#include <windows.h>
#include <ws2tcpip.h>
#include <iphlpapi.h>
#include <restartmanager.h>
#include <shellapi.h>
#include <tlhelp32.h>
#include <winternl.h>
// clang-format on

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <set>
#include <vector>

#include "platform/windows/wide.hpp"

namespace ddp::proc {
namespace {

using platform::win::Handle;

// The process's command line as Task Manager shows it: ProcessCommandLineInformation (Windows 8.1+),
// else read from its PEB (Wine implements only the latter).
std::wstring command_line_of(HANDLE process) {
  constexpr auto kProcessCommandLineInformation = static_cast<PROCESSINFOCLASS>(60);
  std::vector<char> buf(64 * 1024);
  ULONG len = 0;
  if (NtQueryInformationProcess(process, kProcessCommandLineInformation, buf.data(), static_cast<ULONG>(buf.size()),
                                &len) == 0) {
    const auto* text = reinterpret_cast<const UNICODE_STRING*>(buf.data());
    return std::wstring(text->Buffer, text->Length / sizeof(wchar_t));
  }
  PROCESS_BASIC_INFORMATION basic{};
  if (NtQueryInformationProcess(process, ProcessBasicInformation, &basic, sizeof basic, nullptr) != 0) return {};
  PEB peb{};
  RTL_USER_PROCESS_PARAMETERS params{};
  if (!ReadProcessMemory(process, basic.PebBaseAddress, &peb, sizeof peb, nullptr) ||
      !ReadProcessMemory(process, peb.ProcessParameters, &params, sizeof params, nullptr)) {
    return {};
  }
  std::wstring text(params.CommandLine.Length / sizeof(wchar_t), L'\0');
  if (!ReadProcessMemory(process, params.CommandLine.Buffer, text.data(), params.CommandLine.Length, nullptr))
    return {};
  return text;
}

std::optional<pid_t> parent_of(pid_t pid) {
  Handle snapshot(CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0));
  if (!snapshot) return std::nullopt;
  PROCESSENTRY32W entry{};
  entry.dwSize = sizeof entry;
  for (BOOL ok = Process32FirstW(snapshot.get(), &entry); ok; ok = Process32NextW(snapshot.get(), &entry)) {
    if (static_cast<pid_t>(entry.th32ProcessID) == pid) return static_cast<pid_t>(entry.th32ParentProcessID);
  }
  return std::nullopt;
}

// Every row of the IPv4 and IPv6 TCP tables of `kind` (listeners or connections), with its owner:
// fn(owner pid, local port, remote port).
template <typename Fn>
void for_each_tcp_row(TCP_TABLE_CLASS kind, Fn&& fn) {
  for (ULONG family : {AF_INET, AF_INET6}) {
    DWORD size = 0;
    GetExtendedTcpTable(nullptr, &size, FALSE, family, kind, 0);
    std::vector<char> buf(size + 4096);  // rows may arrive between the two calls
    size = static_cast<DWORD>(buf.size());
    if (GetExtendedTcpTable(buf.data(), &size, FALSE, family, kind, 0) != NO_ERROR) continue;
    if (family == AF_INET) {
      const auto* table = reinterpret_cast<const MIB_TCPTABLE_OWNER_PID*>(buf.data());
      for (DWORD i = 0; i < table->dwNumEntries; ++i) {
        const auto& row = table->table[i];
        fn(static_cast<pid_t>(row.dwOwningPid), ntohs(static_cast<u_short>(row.dwLocalPort)),
           ntohs(static_cast<u_short>(row.dwRemotePort)));
      }
    } else {
      const auto* table = reinterpret_cast<const MIB_TCP6TABLE_OWNER_PID*>(buf.data());
      for (DWORD i = 0; i < table->dwNumEntries; ++i) {
        const auto& row = table->table[i];
        fn(static_cast<pid_t>(row.dwOwningPid), ntohs(static_cast<u_short>(row.dwLocalPort)),
           ntohs(static_cast<u_short>(row.dwRemotePort)));
      }
    }
  }
}

// When a process that still runs was created (FILETIME, 100 ns ticks): the start time of
// read_proc_stat; nullopt when `process` is no handle, has exited, or cannot be asked.
std::optional<std::uint64_t> running_since(const Handle& process) {
  if (!process || WaitForSingleObject(process.get(), 0) != WAIT_TIMEOUT) return std::nullopt;
  FILETIME created{}, exited{}, kernel{}, user{};
  if (!GetProcessTimes(process.get(), &created, &exited, &kernel, &user)) return std::nullopt;
  return (std::uint64_t{created.dwHighDateTime} << 32) | created.dwLowDateTime;
}

// A handle that can read a process's command line (its memory), or at least name it.
Handle open_for_command_line(DWORD pid) {
  Handle process(OpenProcess(PROCESS_QUERY_INFORMATION | PROCESS_VM_READ, FALSE, pid));
  if (!process) process.reset(OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid));
  return process;
}

// The user SID of a token, as bytes (empty when unreadable).
std::vector<char> token_user(HANDLE process) {
  HANDLE token = nullptr;
  if (!OpenProcessToken(process, TOKEN_QUERY, &token)) return {};
  Handle closer(token);
  DWORD size = 0;
  GetTokenInformation(token, TokenUser, nullptr, 0, &size);
  std::vector<char> buf(size);
  if (size == 0 || !GetTokenInformation(token, TokenUser, buf.data(), size, &size)) return {};
  PSID sid = reinterpret_cast<TOKEN_USER*>(buf.data())->User.Sid;
  const auto* bytes = static_cast<const char*>(sid);
  return std::vector<char>(bytes, bytes + GetLengthSid(sid));
}

// Whether process `pid` runs as this process's user: false when its token cannot be read (another
// user's process, to one without privilege). A handle of its own, with the most access it gets
// (Wine wants PROCESS_QUERY_INFORMATION for a token; Windows takes the limited right).
bool same_user_as_us(pid_t pid) {
  static const std::vector<char> ours = token_user(GetCurrentProcess());
  for (DWORD access : {DWORD{PROCESS_QUERY_INFORMATION}, DWORD{PROCESS_QUERY_LIMITED_INFORMATION}}) {
    Handle process(OpenProcess(access, FALSE, static_cast<DWORD>(pid)));
    if (!process) continue;
    auto theirs = token_user(process.get());
    if (!theirs.empty()) return !ours.empty() && theirs == ours;
  }
  return false;
}

}  // namespace

std::optional<ProcStat> read_proc_stat(pid_t pid) {
  Handle process(OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE, FALSE, static_cast<DWORD>(pid)));
  auto created = running_since(process);
  if (!created) return std::nullopt;  // gone
  ProcStat st;
  st.ppid = parent_of(pid).value_or(0);
  st.start_time = *created;
  st.same_user = same_user_as_us(pid);
  return st;
}

bool terminate_process(pid_t pid, std::uint64_t start_time) {
  Handle process(
      OpenProcess(PROCESS_TERMINATE | PROCESS_QUERY_LIMITED_INFORMATION | SYNCHRONIZE, FALSE, static_cast<DWORD>(pid)));
  if (running_since(process) != start_time || !same_user_as_us(pid)) return false;
  return TerminateProcess(process.get(), 137) != 0;  // 128 + SIGKILL, as a shell would say
}

// Windows has no stop signals; a suspended process (all threads suspended) is not read here.
std::optional<StoppedProcess> stopped(pid_t) { return std::nullopt; }

std::optional<std::string> orphaned(pid_t pid) {
  auto st = read_proc_stat(pid);
  if (!st || st->ppid == 0) return std::nullopt;  // no parent known (one started from outside Windows, under Wine)
  auto parent = read_proc_stat(st->ppid);
  if (!parent) return "its parent, pid " + std::to_string(st->ppid) + ", is gone";
  if (parent->start_time > st->start_time) {
    return "its parent, pid " + std::to_string(st->ppid) + ", is gone (that pid now belongs to a younger process)";
  }
  return std::nullopt;
}

std::string cmdline(pid_t pid) {
  Handle process = open_for_command_line(static_cast<DWORD>(pid));
  if (!process) return "";
  return platform::win::to_utf8(command_line_of(process.get()));
}

std::vector<ProcessInfo> listeners_on_port(std::uint16_t port) {
  std::vector<ProcessInfo> found;
  std::set<pid_t> seen;
  bool anonymous = false;  // Wine's table has no owners
  for_each_tcp_row(TCP_TABLE_OWNER_PID_LISTENER, [&](pid_t owner, unsigned local, unsigned) {
    if (local != port) return;
    if (owner == 0) {
      anonymous = true;
    } else if (seen.insert(owner).second) {
      found.push_back({owner, cmdline(owner)});
    }
  });
  if (found.empty() && anonymous) found.push_back({0, ""});
  return found;
}

std::vector<ProcessInfo> processes_with_open(const std::filesystem::path& path) {
  std::vector<ProcessInfo> found;
  DWORD session = 0;
  WCHAR key[CCH_RM_SESSION_KEY + 1] = {};
  if (RmStartSession(&session, 0, key) != ERROR_SUCCESS) return found;
  const std::wstring file = std::filesystem::absolute(path).wstring();
  LPCWSTR files[] = {file.c_str()};
  std::vector<RM_PROCESS_INFO> info(16);
  if (RmRegisterResources(session, 1, files, 0, nullptr, 0, nullptr) == ERROR_SUCCESS) {
    for (;;) {
      UINT needed = 0;
      auto count = static_cast<UINT>(info.size());
      DWORD reasons = 0;
      const DWORD rc = RmGetList(session, &needed, &count, info.data(), &reasons);
      if (rc == ERROR_MORE_DATA) {
        info.resize(needed + 4);
        continue;
      }
      if (rc == ERROR_SUCCESS) {
        for (UINT i = 0; i < count; ++i) {
          const auto pid = static_cast<pid_t>(info[i].Process.dwProcessId);
          found.push_back({pid, cmdline(pid)});
        }
      }
      break;
    }
  }
  RmEndSession(session);
  return found;
}

namespace {

// SystemExtendedHandleInformation (64): every open handle of every process, with its owner's pid.
// mingw's winternl.h has neither the class nor its rows.
struct HandleEntryEx {
  PVOID object;
  ULONG_PTR pid;
  ULONG_PTR handle;
  ULONG granted_access;
  USHORT creator_back_trace_index;
  USHORT object_type_index;
  ULONG attributes;
  ULONG reserved;
};
struct HandleTableEx {
  ULONG_PTR count;
  ULONG_PTR reserved;
  HandleEntryEx handles[1];
};
// The enum of mingw's winternl.h ends below 64: the value is copied in, not cast (-Wconversion).
SYSTEM_INFORMATION_CLASS extended_handle_information() {
  SYSTEM_INFORMATION_CLASS c{};
  const int value = 64;
  static_assert(sizeof c == sizeof value);
  std::memcpy(&c, &value, sizeof c);
  return c;
}
constexpr NTSTATUS kStatusInfoLengthMismatch = static_cast<NTSTATUS>(0xC0000004L);

// The handle table's bytes, or empty when the system will not give it.
std::vector<char> handle_table() {
  std::vector<char> buf(1 << 20);
  for (int tries = 0; tries < 8; ++tries) {
    ULONG needed = 0;
    const NTSTATUS rc =
        NtQuerySystemInformation(extended_handle_information(), buf.data(), static_cast<ULONG>(buf.size()), &needed);
    if (rc == 0) return buf;
    if (rc != kStatusInfoLengthMismatch || buf.size() >= (std::size_t{256} << 20)) return {};
    buf.resize(std::max<std::size_t>(buf.size() * 2, needed + (64 << 10)));  // handles come and go between calls
  }
  return {};
}

// C:\dir\file from GetFinalPathNameByHandleW's \\?\C:\dir\file (\\?\UNC\server\share: \\server\share).
std::filesystem::path plain_path(std::wstring p) {
  if (p.rfind(L"\\\\?\\UNC\\", 0) == 0) return std::filesystem::path(L"\\\\" + p.substr(8));
  if (p.rfind(L"\\\\?\\", 0) == 0) return std::filesystem::path(p.substr(4));
  return std::filesystem::path(p);
}

}  // namespace

// The handle table of the whole system (NtQuerySystemInformation's extended handle list), the rows
// of `pid`, each handle copied into this process (DuplicateHandle: needs PROCESS_DUP_HANDLE on it,
// which a process of our own user grants) and named by GetFinalPathNameByHandleW when it is a disk
// file (GetFileType first: naming a pipe's handle can block). Wine keeps the table and answers all
// three, so the Wine tests run this path itself (unlike the Restart Manager's, a stub there).
std::vector<std::filesystem::path> open_files(pid_t pid) {
  std::vector<std::filesystem::path> out;
  Handle process(OpenProcess(PROCESS_DUP_HANDLE, FALSE, static_cast<DWORD>(pid)));
  if (!process) return out;
  const auto table = handle_table();
  if (table.empty()) return out;
  const auto* t = reinterpret_cast<const HandleTableEx*>(table.data());
  const std::size_t room = (table.size() - offsetof(HandleTableEx, handles)) / sizeof(HandleEntryEx);
  const std::size_t rows = std::min<std::size_t>(t->count, room);
  std::vector<wchar_t> name(32768);
  for (std::size_t i = 0; i < rows; ++i) {
    const auto& row = t->handles[i];
    if (row.pid != static_cast<ULONG_PTR>(pid)) continue;
    HANDLE copy = nullptr;
    if (!DuplicateHandle(process.get(), reinterpret_cast<HANDLE>(row.handle), GetCurrentProcess(), &copy, 0, FALSE,
                         DUPLICATE_SAME_ACCESS)) {
      continue;  // not a handle one may copy (a section of the system's, one closed meanwhile)
    }
    Handle mine(copy);
    if (GetFileType(copy) != FILE_TYPE_DISK) continue;
    const DWORD len = GetFinalPathNameByHandleW(copy, name.data(), static_cast<DWORD>(name.size()),
                                                FILE_NAME_NORMALIZED | VOLUME_NAME_DOS);
    if (len == 0 || len >= name.size()) continue;
    auto path = plain_path(std::wstring(name.data(), len));
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) continue;  // a directory (its working directory)
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(std::move(path));
  }
  return out;
}

bool connected_to_port(pid_t pid, std::uint16_t port) {
  bool connected = false;
  for_each_tcp_row(TCP_TABLE_OWNER_PID_CONNECTIONS, [&](pid_t owner, unsigned, unsigned remote) {
    if (owner == pid && remote == port) connected = true;
  });
  return connected;
}

std::optional<OpenFileLimit> open_file_limit(std::string&) { return std::nullopt; }

std::uint64_t raise_open_file_limit() { return std::uint64_t{1} << 24; }

std::vector<ProcessTexts> process_texts() {
  std::vector<ProcessTexts> out;
  Handle snapshot(CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0));
  if (!snapshot) return out;
  PROCESSENTRY32W entry{};
  entry.dwSize = sizeof entry;
  for (BOOL ok = Process32FirstW(snapshot.get(), &entry); ok; ok = Process32NextW(snapshot.get(), &entry)) {
    const auto pid = static_cast<pid_t>(entry.th32ProcessID);
    Handle process = open_for_command_line(entry.th32ProcessID);
    if (!process) continue;
    const std::wstring line = command_line_of(process.get());
    if (line.empty()) continue;
    ProcessTexts p;
    p.pid = pid;
    int argc = 0;
    if (wchar_t** argv = CommandLineToArgvW(line.c_str(), &argc)) {
      for (int i = 0; i < argc; ++i) p.argv.push_back(platform::win::to_utf8(argv[i]));
      LocalFree(argv);
    }
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<std::string> lock_table() { return std::nullopt; }

}  // namespace ddp::proc
