// platform/child_exits.hpp on Windows: one wait per child on its process handle.
#include "platform/child_exits.hpp"

#include <boost/asio/windows/object_handle.hpp>
#include <chrono>
#include <map>

#include "platform/signal_numbers.hpp"
#include "platform/windows/child_native.hpp"

namespace ddp::platform {

struct ChildExits::Impl : std::enable_shared_from_this<ChildExits::Impl> {
  Impl(boost::asio::io_context& context, Handler handler) : io(context), on_exit(std::move(handler)) {}

  struct Waiting {
    boost::asio::windows::object_handle wait;
    std::shared_ptr<Child::Native> native;
    int tag;
  };

  void exited(pid_t pid) {
    auto it = waiting.find(pid);
    if (it == waiting.end() || stopped) return;
    auto w = std::move(it->second);
    waiting.erase(it);
    DWORD code = 0;
    GetExitCodeProcess(w->native->process.get(), &code);
    ChildExit x;
    x.pid = pid;
    x.tag = w->tag;
    x.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    // Our own stop, in the supervisor's words: the job ended by SIGKILL, or Ctrl-Break (SIGTERM) obeyed.
    const int stopped_by = w->native->stopped_by;
    if (stopped_by == sig::kKill && code == win::kKilledExitCode) {
      x.signal = sig::kKill;
    } else if (stopped_by != 0 && stopped_by != sig::kKill && code == win::kControlCExit) {
      x.signal = stopped_by;
    } else {
      x.exit_code = static_cast<int>(code);
    }
    on_exit(x);
  }

  boost::asio::io_context& io;
  Handler on_exit;
  std::map<pid_t, std::unique_ptr<Waiting>> waiting;
  bool stopped = false;
};

ChildExits::ChildExits(boost::asio::io_context& io, Handler on_exit)
    : impl_(std::make_shared<Impl>(io, std::move(on_exit))) {}

ChildExits::~ChildExits() { stop(); }

void ChildExits::watch(const Child& child, int tag) {
  const auto& native = child.native();
  if (!native) return;
  HANDLE dup = nullptr;
  DuplicateHandle(GetCurrentProcess(), native->process.get(), GetCurrentProcess(), &dup, SYNCHRONIZE, FALSE, 0);
  auto w =
      std::make_unique<Impl::Waiting>(Impl::Waiting{boost::asio::windows::object_handle(impl_->io, dup), native, tag});
  const pid_t pid = child.pid();
  w->wait.async_wait([weak = std::weak_ptr<Impl>(impl_), pid](const boost::system::error_code& ec) {
    auto impl = weak.lock();
    if (!ec && impl) impl->exited(pid);
  });
  impl_->waiting[pid] = std::move(w);
}

std::size_t ChildExits::watched() const { return impl_->waiting.size(); }

void ChildExits::stop() {
  impl_->stopped = true;
  for (auto& [pid, w] : impl_->waiting) {
    boost::system::error_code ec;
    w->wait.cancel(ec);
  }
}

}  // namespace ddp::platform
