// platform/child_exits.hpp on POSIX: SIGCHLD, waitid peeks, waitpid of the watched children only.
#include "platform/child_exits.hpp"

#include <sys/wait.h>

#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <csignal>
#include <set>
#include <unordered_map>
#include <utility>

namespace ddp::platform {

struct ChildExits::Impl {
  Impl(boost::asio::io_context& io, Handler handler) : sigchld(io, SIGCHLD), on_exit(std::move(handler)) {}

  void arm() {
    sigchld.async_wait([this](const boost::system::error_code& ec, int) {
      if (ec || stopped) return;
      reap();
      arm();
    });
  }

  void reap() {
    const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    // Which child exited, without reaping it (it may not be ours): O(1) per exit. A child that is
    // not watched ends the peeking; a scan of the watched ones then reaps what the peek could not reach.
    for (;;) {
      siginfo_t info{};
      if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) return;
      if (by_pid.count(info.si_pid) == 0) break;
      int status = 0;
      if (::waitpid(info.si_pid, &status, WNOHANG) != info.si_pid) break;  // never peek the same one twice
      reaped(info.si_pid, status, now);
      if (stopped) return;
    }
    for (auto it = by_tag.begin(); it != by_tag.end() && !stopped;) {
      const pid_t pid = (it++)->second;  // reaped() erases the current entry
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) == pid) reaped(pid, status, now);
    }
  }

  void reaped(pid_t pid, int status, double now) {
    const int tag = by_pid.at(pid);
    by_pid.erase(pid);
    by_tag.erase({tag, pid});
    ChildExit x;
    x.pid = pid;
    x.tag = tag;
    x.time = now;
    if (WIFEXITED(status)) x.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) x.signal = WTERMSIG(status);
    on_exit(x);
  }

  boost::asio::signal_set sigchld;
  Handler on_exit;
  std::unordered_map<pid_t, int> by_pid;   // pid → tag: O(1) per exit
  std::set<std::pair<int, pid_t>> by_tag;  // the scan's order
  bool stopped = false;
};

ChildExits::ChildExits(boost::asio::io_context& io, Handler on_exit)
    : impl_(std::make_shared<Impl>(io, std::move(on_exit))) {
  impl_->arm();
}

ChildExits::~ChildExits() { stop(); }

void ChildExits::watch(const Child& child, int tag) {
  impl_->by_pid[child.pid()] = tag;
  impl_->by_tag.insert({tag, child.pid()});
  // It may have exited before we were told: its SIGCHLD came and went, so look now.
  boost::asio::post(impl_->sigchld.get_executor(), [weak = std::weak_ptr<Impl>(impl_)] {
    if (auto impl = weak.lock(); impl && !impl->stopped) impl->reap();
  });
}

std::size_t ChildExits::watched() const { return impl_->by_pid.size(); }

void ChildExits::stop() {
  impl_->stopped = true;
  boost::system::error_code ec;
  impl_->sigchld.cancel(ec);
}

}  // namespace ddp::platform
