#include "platform/stop_signals.hpp"

#include <boost/asio/signal_set.hpp>
#include <csignal>

#include "platform/signal_numbers.hpp"

namespace ddp::platform {

static_assert(sig::kHup == SIGHUP && sig::kInt == SIGINT && sig::kQuit == SIGQUIT && sig::kAbrt == SIGABRT &&
              sig::kKill == SIGKILL && sig::kUsr1 == SIGUSR1 && sig::kSegv == SIGSEGV && sig::kUsr2 == SIGUSR2 &&
              sig::kPipe == SIGPIPE && sig::kTerm == SIGTERM && sig::kChld == SIGCHLD && sig::kStop == SIGSTOP &&
              sig::kLimit == NSIG);

struct StopSignals::Impl {
  explicit Impl(boost::asio::io_context& io) : set(io) {}
  boost::asio::signal_set set;
};

StopSignals::StopSignals(boost::asio::io_context& io) : impl_(std::make_shared<Impl>(io)) {}
StopSignals::~StopSignals() = default;

bool StopSignals::add(int signo) {
  boost::system::error_code ec;
  impl_->set.add(signo, ec);
  return !ec;
}

void StopSignals::async_wait(Handler handler) { impl_->set.async_wait(std::move(handler)); }

void StopSignals::cancel() {
  boost::system::error_code ec;
  impl_->set.cancel(ec);
}

bool request_stop(pid_t pid) { return pid > 0 && ::kill(pid, SIGTERM) == 0; }

void ignore_broken_pipes() { std::signal(SIGPIPE, SIG_IGN); }

}  // namespace ddp::platform
