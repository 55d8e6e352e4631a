// platform/service.hpp on Windows: the service control manager's protocol. The dispatcher
// (StartServiceCtrlDispatcherW) keeps the calling thread until the service stops; it starts
// ServiceMain on a thread of its own, which runs the body; the manager's controls arrive on the
// dispatcher's thread (the handler below). ServiceMain takes no context: one service per process,
// its state in `current`.
#include "platform/service.hpp"

#include <windows.h>

#include <exception>
#include <mutex>

#include "platform/windows/wide.hpp"

namespace ddp::platform {

namespace {

struct Service {
  std::wstring name;
  const std::function<int()>* body = nullptr;
  const std::function<void()>* on_stop = nullptr;
  SERVICE_STATUS_HANDLE handle = nullptr;
  std::mutex mu;  // status: ServiceMain's thread and the handler's
  SERVICE_STATUS status{};
  int exit_code = 0;
  std::exception_ptr error;
  bool ran = false;
};

Service* current = nullptr;

void report(Service& s, DWORD state, DWORD win32_exit = NO_ERROR, DWORD specific_exit = 0) {
  std::lock_guard lock(s.mu);
  s.status.dwServiceType = SERVICE_WIN32_OWN_PROCESS;
  s.status.dwCurrentState = state;
  s.status.dwControlsAccepted = state == SERVICE_RUNNING ? SERVICE_ACCEPT_STOP | SERVICE_ACCEPT_SHUTDOWN : 0;
  s.status.dwWin32ExitCode = win32_exit;
  s.status.dwServiceSpecificExitCode = specific_exit;
  s.status.dwCheckPoint = state == SERVICE_RUNNING || state == SERVICE_STOPPED ? 0 : s.status.dwCheckPoint + 1;
  s.status.dwWaitHint = state == SERVICE_RUNNING || state == SERVICE_STOPPED ? 0 : 30000;
  SetServiceStatus(s.handle, &s.status);
}

DWORD WINAPI on_control(DWORD control, DWORD, LPVOID, LPVOID context) {
  auto& s = *static_cast<Service*>(context);
  switch (control) {
    case SERVICE_CONTROL_STOP:
    case SERVICE_CONTROL_SHUTDOWN:
      report(s, SERVICE_STOP_PENDING);
      (*s.on_stop)();
      return NO_ERROR;
    case SERVICE_CONTROL_INTERROGATE: return NO_ERROR;
    default: return ERROR_CALL_NOT_IMPLEMENTED;
  }
}

void WINAPI service_main(DWORD, LPWSTR*) {
  auto& s = *current;
  s.handle = RegisterServiceCtrlHandlerExW(s.name.c_str(), on_control, &s);
  if (!s.handle) return;  // the dispatcher returns; run_as_service says the body never ran
  s.ran = true;
  report(s, SERVICE_RUNNING);
  try {
    s.exit_code = (*s.body)();
  } catch (...) {
    s.error = std::current_exception();
    s.exit_code = 1;
  }
  if (s.exit_code == 0) {
    report(s, SERVICE_STOPPED);
  } else {
    report(s, SERVICE_STOPPED, ERROR_SERVICE_SPECIFIC_ERROR, static_cast<DWORD>(s.exit_code));
  }
}

}  // namespace

int run_as_service(const std::string& name, const std::function<int()>& body, const std::function<void()>& on_stop) {
  Service s;
  s.name = win::to_wide(name);
  s.body = &body;
  s.on_stop = &on_stop;
  current = &s;
  SERVICE_TABLE_ENTRYW table[] = {{s.name.data(), service_main}, {nullptr, nullptr}};
  const bool dispatched = StartServiceCtrlDispatcherW(table);
  const DWORD err = GetLastError();
  current = nullptr;
  if (!dispatched) {
    if (err == ERROR_FAILED_SERVICE_CONTROLLER_CONNECT) {
      throw NotAService(
          "--service: this process was not started by the service manager; start the service with "
          "`sc start " +
          name + "`, or run without --service");
    }
    throw NotAService("--service: cannot reach the service manager: " + win::error_text(err));
  }
  if (!s.ran) throw NotAService("--service: the service manager did not accept the service '" + name + "'");
  if (s.error) std::rethrow_exception(s.error);
  return s.exit_code;
}

}  // namespace ddp::platform
