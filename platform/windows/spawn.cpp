// platform/spawn.hpp on Windows: CreateProcessW (suspended, a new console process group, only the
// named handles inherited), a Job Object of its own, then resumed.
#include "platform/spawn.hpp"
#include "platform/child_wait.hpp"

#include <algorithm>
#include <cwctype>

#include "platform/signal_numbers.hpp"
#include "platform/windows/child_native.hpp"

namespace ddp {

using platform::win::error_text;
using platform::win::Handle;
using platform::win::to_wide;

bool Child::signal_group(int signo) const {
  if (!native_) return false;
  if (signo == sig::kKill) {
    if (!TerminateJobObject(native_->job.get(), platform::win::kKilledExitCode)) return false;
    native_->stopped_by = signo;
    return true;
  }
  if (signo == sig::kTerm || signo == sig::kInt || signo == sig::kHup) {
    // The group id of a process started with CREATE_NEW_PROCESS_GROUP is its pid.
    if (!GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, static_cast<DWORD>(pid_))) return false;
    native_->stopped_by = signo;
    return true;
  }
  return false;
}

namespace {

// One argument as the C runtime's parser (and CommandLineToArgvW) reads it back.
std::wstring quote_argument(const std::wstring& arg) {
  if (!arg.empty() && arg.find_first_of(L" \t\n\v\"") == std::wstring::npos) return arg;
  std::wstring out = L"\"";
  for (auto it = arg.begin();; ++it) {
    std::size_t backslashes = 0;
    while (it != arg.end() && *it == L'\\') {
      ++it;
      ++backslashes;
    }
    if (it == arg.end()) {
      out.append(backslashes * 2, L'\\');  // before the closing quote
      break;
    }
    if (*it == L'"') {
      out.append(backslashes * 2 + 1, L'\\');
    } else {
      out.append(backslashes, L'\\');
    }
    out.push_back(*it);
  }
  out.push_back(L'"');
  return out;
}

std::wstring command_line(const std::vector<std::string>& argv) {
  std::wstring line;
  for (const auto& a : argv) {
    if (!line.empty()) line.push_back(L' ');
    line += quote_argument(to_wide(a));
  }
  return line;
}

// "NAME=value\0...\0\0", sorted by name without regard to case, as Windows keeps it.
std::wstring environment_block(const std::vector<std::string>& env) {
  std::vector<std::wstring> vars;
  for (const auto& kv : env) vars.push_back(to_wide(kv));
  auto name_less = [](const std::wstring& a, const std::wstring& b) {
    auto an = a.substr(0, a.find(L'=')), bn = b.substr(0, b.find(L'='));
    return std::lexicographical_compare(an.begin(), an.end(), bn.begin(), bn.end(),
                                        [](wchar_t x, wchar_t y) { return std::towupper(x) < std::towupper(y); });
  };
  std::stable_sort(vars.begin(), vars.end(), name_less);
  std::wstring block;
  for (const auto& v : vars) {
    block += v;
    block.push_back(L'\0');
  }
  if (vars.empty()) block.push_back(L'\0');
  block.push_back(L'\0');
  return block;
}

// An inheritable duplicate of `h` for the child (ours stay non-inheritable).
Handle inheritable(HANDLE h) {
  HANDLE dup = nullptr;
  if (!h || h == INVALID_HANDLE_VALUE) return Handle();
  if (!DuplicateHandle(GetCurrentProcess(), h, GetCurrentProcess(), &dup, 0, TRUE, DUPLICATE_SAME_ACCESS)) {
    return Handle();
  }
  return Handle(dup);
}

SpawnResult failed(const char* what, DWORD code = GetLastError()) {
  SpawnResult r;
  r.what = what;
  r.error = error_text(code);
  return r;
}

// A Job Object for one child: it dies with us (KILL_ON_JOB_CLOSE) and never waits on a crash dialog.
Handle make_job(bool die_with_parent) {
  Handle job(CreateJobObjectW(nullptr, nullptr));
  if (!job) return job;
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits{};
  limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION;
  if (die_with_parent) limits.BasicLimitInformation.LimitFlags |= JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  if (!SetInformationJobObject(job.get(), JobObjectExtendedLimitInformation, &limits, sizeof limits)) return Handle();
  return job;
}

}  // namespace

SpawnResult spawn_process(const SpawnRequest& request) {
  if (!request.cgroup_procs.empty()) return failed("cgroups", ERROR_NOT_SUPPORTED);
  Handle null_in(
      CreateFileW(L"NUL", GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE, nullptr, OPEN_EXISTING, 0, nullptr));
  Handle in = inheritable(null_in.get());
  Handle out =
      inheritable(request.stdout_fd != platform::kNoHandle ? request.stdout_fd : GetStdHandle(STD_OUTPUT_HANDLE));
  const bool shared_output = request.stderr_fd != platform::kNoHandle && request.stderr_fd == request.stdout_fd;
  Handle err = shared_output ? Handle()
                             : inheritable(request.stderr_fd != platform::kNoHandle ? request.stderr_fd
                                                                                    : GetStdHandle(STD_ERROR_HANDLE));
  std::vector<HANDLE> inherited;
  for (const Handle* h : {&in, &out, &err}) {
    if (*h) inherited.push_back(h->get());
  }

  SIZE_T size = 0;
  InitializeProcThreadAttributeList(nullptr, 1, 0, &size);
  std::vector<char> attributes_buf(size);
  auto* attributes = reinterpret_cast<LPPROC_THREAD_ATTRIBUTE_LIST>(attributes_buf.data());
  if (!InitializeProcThreadAttributeList(attributes, 1, 0, &size)) return failed("InitializeProcThreadAttributeList");
  struct AttributesDone {
    LPPROC_THREAD_ATTRIBUTE_LIST list;
    ~AttributesDone() { DeleteProcThreadAttributeList(list); }
  } attributes_done{attributes};
  if (!inherited.empty() &&
      !UpdateProcThreadAttribute(attributes, 0, PROC_THREAD_ATTRIBUTE_HANDLE_LIST, inherited.data(),
                                 inherited.size() * sizeof(HANDLE), nullptr, nullptr)) {
    return failed("UpdateProcThreadAttribute");
  }

  STARTUPINFOEXW si{};
  si.StartupInfo.cb = sizeof si;
  si.StartupInfo.dwFlags = STARTF_USESTDHANDLES;
  si.StartupInfo.hStdInput = in.get();
  si.StartupInfo.hStdOutput = out.get();
  si.StartupInfo.hStdError = err ? err.get() : out.get();
  si.lpAttributeList = attributes;

  Handle job = make_job(request.die_with_parent);
  if (!job) return failed("CreateJobObject");

  std::wstring program = to_wide(request.program);
  std::wstring line = command_line(request.argv);
  std::wstring env = environment_block(request.env);
  DWORD flags = CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT | EXTENDED_STARTUPINFO_PRESENT;
  if (request.new_session) flags |= CREATE_NEW_PROCESS_GROUP;
  if (request.own_console) flags |= CREATE_NO_WINDOW;
  const std::wstring workdir = request.workdir.wstring();
  PROCESS_INFORMATION pi{};
  if (!CreateProcessW(program.c_str(), line.data(), nullptr, nullptr, TRUE, flags, env.data(),
                      workdir.empty() ? nullptr : workdir.c_str(), &si.StartupInfo, &pi)) {
    return failed("CreateProcess");
  }
  Handle process(pi.hProcess);
  Handle thread(pi.hThread);
  // In its job before it runs a single instruction: nothing it starts can escape it.
  if (!AssignProcessToJobObject(job.get(), process.get())) {
    const DWORD code = GetLastError();
    TerminateProcess(process.get(), 1);
    return failed("AssignProcessToJobObject", code);
  }
  if (!request.cpu_affinity.empty()) {
    DWORD_PTR mask = 0;
    for (int cpu : request.cpu_affinity) {
      if (cpu >= 0 && cpu < 64) mask |= DWORD_PTR{1} << cpu;
    }
    if (mask && !SetProcessAffinityMask(process.get(), mask)) {
      const DWORD code = GetLastError();
      TerminateJobObject(job.get(), 1);
      return failed("SetProcessAffinityMask", code);
    }
  }
  if (ResumeThread(thread.get()) == static_cast<DWORD>(-1)) {
    const DWORD code = GetLastError();
    TerminateJobObject(job.get(), 1);
    return failed("ResumeThread", code);
  }
  auto native = std::make_shared<Child::Native>();
  native->process = std::move(process);
  native->job = std::move(job);
  SpawnResult r;
  r.child = Child(static_cast<pid_t>(pi.dwProcessId), std::move(native));
  return r;
}

namespace platform {

bool reap_child(const Child& child, bool wait) {
  if (!child || !child.native() || !child.native()->process) return true;
  return WaitForSingleObject(child.native()->process.get(), wait ? INFINITE : 0) == WAIT_OBJECT_0;
}

}  // namespace platform

}  // namespace ddp
