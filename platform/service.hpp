#pragma once
// Running as an OS service: the Windows service control manager's side of `ddp-launch daemon
// --service` (the installer's /SERVICE=1 registers it; the counterpart of the .deb's systemd
// units, which need nothing of this: systemd runs the daemon as a plain process and stops it
// with SIGTERM). POSIX has no such protocol: run_as_service refuses.
#include <functional>
#include <stdexcept>
#include <string>

namespace ddp::platform {

// This process was not started as the service (or this platform has none): the message says how
// to start it instead.
struct NotAService : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Connects to the service manager (StartServiceCtrlDispatcherW) as the service `name` and runs
// `body` on the service's thread, reported RUNNING while it runs. A stop (SERVICE_CONTROL_STOP, or
// SHUTDOWN) is reported STOP_PENDING and calls `on_stop` on the manager's thread: it must only ask
// `body` to finish (post to its loop, set an event) and return. When `body` returns, the service is
// reported STOPPED with its exit code (non-zero: ERROR_SERVICE_SPECIFIC_ERROR carrying it), and so
// is this call's result. An exception from `body` is a STOPPED with exit code 1, then rethrown here.
// Throws NotAService when the process was not started by the service manager (and on POSIX).
int run_as_service(const std::string& name, const std::function<int()>& body, const std::function<void()>& on_stop);

}  // namespace ddp::platform
