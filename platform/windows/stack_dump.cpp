#include "platform/stack_dump.hpp"

#include <windows.h>
// windows.h first: tlhelp32.h needs its types.
#include <tlhelp32.h>

#include <algorithm>
#include <cwctype>
#include <string>
#include <vector>

#include "platform/windows/wide.hpp"

namespace ddp::platform {

namespace {

using win::Handle;

// Whether a file name (no directory) is a Python interpreter's: python.exe, pythonw.exe, python3.11.exe.
bool python_file_name(std::wstring_view name) {
  std::wstring file(name);
  std::transform(file.begin(), file.end(), file.begin(), [](wchar_t c) { return std::towlower(c); });
  return file.starts_with(L"python");
}

// When process `pid` was created (100 ns since 1601); 0 when it cannot be read.
ULONGLONG created_at(DWORD pid) {
  Handle process(OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid));
  FILETIME created{}, exited{}, kernel{}, user{};
  if (!process || !GetProcessTimes(process.get(), &created, &exited, &kernel, &user)) return 0;
  return (ULONGLONG{created.dwHighDateTime} << 32) | created.dwLowDateTime;
}

// The processes that run the rank's Python. A venv's Scripts\python.exe is a launcher (Python's
// venv redirector since 3.7.2) that starts the base interpreter as its child and waits for it: the
// child runs faulthandler and writes to the same stderr, and an exception in the launcher would
// end it with no dump (and end the watch of the rank before the child's dump is read). So: the
// python-named children of `pid` started after it (a child listing a reused pid as its parent is
// older than `pid`), else `pid` itself.
std::vector<DWORD> interpreters_of(DWORD pid) {
  std::vector<DWORD> out;
  const ULONGLONG born = created_at(pid);
  Handle snap(CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0));
  PROCESSENTRY32W e{};
  e.dwSize = sizeof(e);
  for (BOOL ok = snap ? Process32FirstW(snap.get(), &e) : FALSE; ok; ok = Process32NextW(snap.get(), &e)) {
    if (e.th32ParentProcessID != pid || e.th32ProcessID == pid || !python_file_name(e.szExeFile)) continue;
    if (born != 0 && created_at(e.th32ProcessID) < born) continue;
    out.push_back(e.th32ProcessID);
  }
  if (out.empty()) out.push_back(pid);
  return out;
}

// The base address of module `name` (e.g. L"ntdll.dll") in process `pid`, or 0.
std::uintptr_t module_base(DWORD pid, std::wstring_view name) {
  Handle snap(CreateToolhelp32Snapshot(TH32CS_SNAPMODULE | TH32CS_SNAPMODULE32, pid));
  if (!snap) return 0;
  MODULEENTRY32W m{};
  m.dwSize = sizeof(m);
  for (BOOL ok = Module32FirstW(snap.get(), &m); ok; ok = Module32NextW(snap.get(), &m)) {
    if (_wcsicmp(m.szModule, std::wstring(name).c_str()) == 0) return reinterpret_cast<std::uintptr_t>(m.modBaseAddr);
  }
  return 0;
}

// The exception raised in process `pid` (platform/stack_dump.hpp); "" when it was, else why not.
std::string raise_in(DWORD pid) {
  const auto fail = [](const char* what, DWORD code = GetLastError()) {
    return std::string("the stack-dump exception could not be raised in it: ") + what + ": " + win::error_text(code);
  };
  Handle process(OpenProcess(PROCESS_CREATE_THREAD | PROCESS_QUERY_INFORMATION | PROCESS_VM_OPERATION |
                                 PROCESS_VM_WRITE | PROCESS_VM_READ,
                             FALSE, pid));
  if (!process) return fail("OpenProcess");
  // RtlRaiseException in the target: its ntdll base plus the function's offset in ours.
  HMODULE ours = GetModuleHandleW(L"ntdll.dll");
  FARPROC raise = ours ? GetProcAddress(ours, "RtlRaiseException") : nullptr;
  if (!raise) return fail("GetProcAddress(ntdll, RtlRaiseException)");
  const std::uintptr_t base = module_base(pid, L"ntdll.dll");
  if (!base) return fail("CreateToolhelp32Snapshot (ntdll.dll in it)");
  const std::uintptr_t start =
      base + (reinterpret_cast<std::uintptr_t>(raise) - reinterpret_cast<std::uintptr_t>(ours));
  // The record, in the target's memory (the page goes with the process).
  EXCEPTION_RECORD record{};
  record.ExceptionCode = kStackDumpCode;
  record.ExceptionFlags = EXCEPTION_NONCONTINUABLE;
  void* remote = VirtualAllocEx(process.get(), nullptr, sizeof(record), MEM_COMMIT | MEM_RESERVE, PAGE_READWRITE);
  if (!remote) return fail("VirtualAllocEx");
  SIZE_T written = 0;
  if (!WriteProcessMemory(process.get(), remote, &record, sizeof(record), &written) || written != sizeof(record)) {
    const DWORD code = GetLastError();
    VirtualFreeEx(process.get(), remote, 0, MEM_RELEASE);
    return fail("WriteProcessMemory", code);
  }
  Handle thread(CreateRemoteThread(process.get(), nullptr, 0, reinterpret_cast<LPTHREAD_START_ROUTINE>(start), remote,
                                   0, nullptr));
  if (!thread) {
    const DWORD code = GetLastError();
    VirtualFreeEx(process.get(), remote, 0, MEM_RELEASE);
    return fail("CreateRemoteThread", code);
  }
  return "";
}

}  // namespace

bool runs_python(pid_t pid) {
  Handle process(OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, static_cast<DWORD>(pid)));
  if (!process) return false;
  wchar_t path[MAX_PATH * 4];
  DWORD size = static_cast<DWORD>(std::size(path));
  if (!QueryFullProcessImageNameW(process.get(), 0, path, &size)) return false;
  std::wstring_view full(path, size);
  auto slash = full.find_last_of(L"\\/");
  return python_file_name(slash == std::wstring_view::npos ? full : full.substr(slash + 1));
}

std::string request_stack_dump(pid_t pid) {
  std::string why_not;
  bool asked = false;
  for (DWORD target : interpreters_of(static_cast<DWORD>(pid))) {
    auto error = raise_in(target);
    if (error.empty())
      asked = true;
    else if (why_not.empty())
      why_not = std::move(error);
  }
  return asked ? "" : why_not;
}

std::string_view stack_dump_name() { return "the stack-dump exception (CreateRemoteThread)"; }

std::string_view native_stack_dump_hint() {
  return "a native rank's stacks come on Windows only from gdb on PATH (the worker SDK has no exception handler "
         "there)";
}

void continue_process(pid_t) {}

}  // namespace ddp::platform
