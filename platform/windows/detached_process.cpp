// platform/detached_process.hpp on Windows: the supervisor is started by spawn.hpp's spawn_process
// (suspended, in a Job Object of its own, resumed) with a job that does NOT end with us
// (die_with_parent = false: no KILL_ON_JOB_CLOSE), in a new process group and a console of its own
// (CREATE_NO_WINDOW: closing the daemon's console does not reach it), its output appended to a
// file. It is followed through a process handle (asio::windows::object_handle), which also keeps
// its pid from being reused; a stop request is a named event the supervisor's StopSignals waits on
// (stop_signals.hpp: SIGTERM), a kill is TerminateProcess (its ranks' KILL_ON_JOB_CLOSE jobs go
// with it).
#include "platform/detached_process.hpp"

#include <windows.h>

#include <boost/asio/windows/object_handle.hpp>
#include <mutex>

#include "platform/host.hpp"
#include "platform/signal_numbers.hpp"
#include "platform/spawn.hpp"
#include "platform/stop_signals.hpp"
#include "platform/windows/child_native.hpp"
#include "platform/windows/wide.hpp"

namespace ddp::platform {

namespace {

// Our own supervisors, by pid, until reaped: their handles keep the exit code readable.
std::mutex children_mu;
std::map<pid_t, Child>& children() {
  static auto* m = new std::map<pid_t, Child>();  // leaked: read at exit by nothing
  return *m;
}

// A Win32 access right set on a process handle for following and stopping it.
constexpr DWORD kFollowRights = SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION | PROCESS_TERMINATE;

bool stop(HANDLE process, pid_t pid, int signo) {
  if (signo == sig::kKill) return process && TerminateProcess(process, win::kKilledExitCode);
  if (signo == sig::kTerm || signo == sig::kInt || signo == sig::kHup) return request_stop(pid);
  return false;
}

}  // namespace

pid_t spawn_detached(const DetachedSpawn& request, std::string& error) {
  if (request.argv.empty()) {
    error = "no program to start";
    return 0;
  }
  // The output file, appended to by it alone from now on (FILE_APPEND_DATA: every write at the end).
  win::Handle out(CreateFileW(request.output_file.wstring().c_str(), FILE_APPEND_DATA | SYNCHRONIZE,
                              FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr, OPEN_ALWAYS,
                              FILE_ATTRIBUTE_NORMAL, nullptr));
  if (!out) {
    error = "cannot open " + request.output_file.string() + ": " + win::error_text();
    return 0;
  }
  auto env = environment();
  for (const auto& [k, v] : request.env_overrides) env[k] = v;
  SpawnRequest spawn;
  spawn.program = request.argv.front();
  spawn.argv = request.argv;
  for (const auto& [k, v] : env) spawn.env.push_back(k + "=" + v);
  spawn.stdout_fd = out.get();
  spawn.stderr_fd = out.get();
  spawn.workdir = request.workdir;
  spawn.new_session = true;
  spawn.own_console = true;
  spawn.die_with_parent = false;  // it outlives us: a restarted daemon re-adopts it
  auto started = spawn_process(spawn);
  if (!started.ok()) {
    error = started.what + ": " + started.error;
    return 0;
  }
  const pid_t pid = started.child.pid();
  std::lock_guard lock(children_mu);
  children()[pid] = std::move(started.child);
  return pid;
}

std::optional<ProcessEnd> reap_child(pid_t pid) {
  Child child;
  {
    std::lock_guard lock(children_mu);
    auto it = children().find(pid);
    if (it == children().end()) return std::nullopt;
    child = std::move(it->second);
    children().erase(it);
  }
  HANDLE process = child.native()->process.get();
  if (WaitForSingleObject(process, INFINITE) != WAIT_OBJECT_0) return std::nullopt;
  DWORD code = 0;
  if (!GetExitCodeProcess(process, &code)) return std::nullopt;
  // Ended by our kill (TerminateProcess's code): told as SIGKILL, as on POSIX.
  if (code == win::kKilledExitCode && child.native()->stopped_by == sig::kKill) return ProcessEnd{0, sig::kKill};
  return ProcessEnd{static_cast<int>(code), 0};
}

struct ProcessWatch::Impl {
  Impl(boost::asio::io_context& io, pid_t p) : handle(io), pid(p) {}
  boost::asio::windows::object_handle handle;
  pid_t pid;
};

ProcessWatch::ProcessWatch(boost::asio::io_context& io, pid_t pid) : impl_(std::make_unique<Impl>(io, pid)) {
  HANDLE h = pid > 0 ? OpenProcess(kFollowRights, FALSE, static_cast<DWORD>(pid)) : nullptr;
  if (!h) return;
  if (WaitForSingleObject(h, 0) == WAIT_OBJECT_0) {  // ended already: a handle to an exited process
    CloseHandle(h);
    return;
  }
  impl_->handle.assign(h);
}

ProcessWatch::~ProcessWatch() { close(); }

bool ProcessWatch::open() const { return impl_->handle.is_open(); }

void ProcessWatch::async_wait(std::function<void()> on_exit) {
  impl_->handle.async_wait([on_exit = std::move(on_exit)](boost::system::error_code ec) {
    if (!ec) on_exit();
  });
}

bool ProcessWatch::signal(int signo) {
  if (!open()) return false;
  const bool done = stop(impl_->handle.native_handle(), impl_->pid, signo);
  if (done && signo == sig::kKill) {
    std::lock_guard lock(children_mu);
    auto it = children().find(impl_->pid);
    if (it != children().end()) it->second.native()->stopped_by = signo;
  }
  return done;
}

void ProcessWatch::close() {
  boost::system::error_code ec;
  if (impl_ && impl_->handle.is_open()) impl_->handle.close(ec);
}

bool signal_process(pid_t pid, int signo) {
  if (pid <= 0) return false;
  win::Handle h(OpenProcess(kFollowRights, FALSE, static_cast<DWORD>(pid)));
  if (!h) return false;
  return stop(h.get(), pid, signo);
}

}  // namespace ddp::platform
