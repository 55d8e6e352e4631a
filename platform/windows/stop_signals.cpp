// platform/stop_signals.hpp on Windows: console control events. Windows runs the handler on a
// thread of its own; it posts the event to the loop of every StopSignals that asked for it.
#include "platform/stop_signals.hpp"

#include <windows.h>

#include <algorithm>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <deque>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "platform/signal_numbers.hpp"

namespace ddp::platform {

struct StopSignals::Impl {
  explicit Impl(boost::asio::io_context& context) : io(context) {}
  boost::asio::io_context& io;
  std::set<int> wanted;    // loop thread only, like the rest below
  std::deque<int> queued;  // arrived with no wait pending
  Handler waiting;

  void arrived(int signo) {
    if (!wanted.count(signo)) return;
    if (!waiting) {
      queued.push_back(signo);
      return;
    }
    auto h = std::exchange(waiting, nullptr);
    h(boost::system::error_code(), signo);
  }
};

namespace {

std::mutex registry_mu;
std::vector<std::weak_ptr<StopSignals::Impl>>* registry = nullptr;  // leaked: handlers may run at exit

int signal_of(DWORD event) {
  switch (event) {
    case CTRL_C_EVENT: return sig::kInt;
    case CTRL_BREAK_EVENT: return sig::kTerm;
    case CTRL_CLOSE_EVENT:
    case CTRL_LOGOFF_EVENT:
    case CTRL_SHUTDOWN_EVENT: return sig::kHup;
    default: return 0;
  }
}

// Posts `signo` to every StopSignals' loop; false when none listens.
bool deliver(int signo) {
  bool delivered = false;
  {
    std::lock_guard lock(registry_mu);
    for (const auto& weak : *registry) {
      auto impl = weak.lock();
      if (!impl) continue;
      delivered = true;
      boost::asio::post(impl->io, [impl, signo] { impl->arrived(signo); });
    }
  }
  return delivered;
}

BOOL WINAPI on_console_event(DWORD event) {
  const int signo = signal_of(event);
  if (!signo) return FALSE;
  return deliver(signo) ? TRUE : FALSE;  // FALSE: the default handler ends the process
}

std::wstring stop_event_name(pid_t pid) { return L"Local\\ddp-launch-stop-" + std::to_wstring(pid); }

// request_stop's event for this process, made at the first StopSignals that wants SIGTERM, and
// waited on by the thread pool for the rest of the process (auto-reset: each set is one SIGTERM).
void listen_for_stop_requests() {
  HANDLE event =
      CreateEventW(nullptr, FALSE, FALSE, stop_event_name(static_cast<pid_t>(GetCurrentProcessId())).c_str());
  if (!event) return;  // stops come by console events alone
  HANDLE wait = nullptr;
  RegisterWaitForSingleObject(
      &wait, event, [](PVOID, BOOLEAN) { deliver(sig::kTerm); }, nullptr, INFINITE, WT_EXECUTEDEFAULT);
}

}  // namespace

StopSignals::StopSignals(boost::asio::io_context& io) : impl_(std::make_shared<Impl>(io)) {}

StopSignals::~StopSignals() {
  cancel();
  std::lock_guard lock(registry_mu);
  if (!registry) return;
  std::erase_if(*registry, [this](const std::weak_ptr<Impl>& w) {
    auto impl = w.lock();
    return !impl || impl == impl_;
  });
}

bool StopSignals::add(int signo) {
  if (signo != sig::kInt && signo != sig::kTerm && signo != sig::kHup) return false;
  if (impl_->wanted.empty()) {
    std::lock_guard lock(registry_mu);
    if (!registry) {
      registry = new std::vector<std::weak_ptr<Impl>>();
      SetConsoleCtrlHandler(on_console_event, TRUE);
      listen_for_stop_requests();
    }
    // A console process started in a new process group ignores Ctrl-C until it asks for it.
    SetConsoleCtrlHandler(nullptr, FALSE);
    registry->push_back(impl_);
  }
  impl_->wanted.insert(signo);
  return true;
}

void StopSignals::async_wait(Handler handler) {
  if (!impl_->queued.empty()) {
    const int signo = impl_->queued.front();
    impl_->queued.pop_front();
    boost::asio::post(impl_->io, [handler = std::move(handler), signo] { handler({}, signo); });
    return;
  }
  impl_->waiting = std::move(handler);
}

void StopSignals::cancel() {
  if (auto h = std::exchange(impl_->waiting, nullptr)) {
    boost::asio::post(impl_->io, [h = std::move(h)] { h(boost::asio::error::operation_aborted, 0); });
  }
}

bool request_stop(pid_t pid) {
  if (pid <= 0) return false;
  HANDLE event = OpenEventW(EVENT_MODIFY_STATE, FALSE, stop_event_name(pid).c_str());
  if (!event) return false;
  const bool set = SetEvent(event);
  CloseHandle(event);
  return set;
}

void ignore_broken_pipes() {}

}  // namespace ddp::platform
