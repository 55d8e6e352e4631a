#include "launcher/rendezvous/rendezvous_watch.hpp"

#include <spdlog/spdlog.h>

#include <utility>

namespace ddp::launcher {

RendezvousWatch::RendezvousWatch(boost::asio::io_context& io, std::chrono::milliseconds timeout, int nnodes,
                                 Hooks hooks)
    : timer_(io), timeout_(timeout), nnodes_(nnodes), hooks_(std::move(hooks)) {}

void RendezvousWatch::begin(int attempt) {
  timer_.cancel();
  attempt_ = attempt;
  complete_ = false;
}

void RendezvousWatch::arm(int attempt) {
  report_.clear();
  timer_.expires_after(timeout_);
  timer_.async_wait([this, attempt](boost::system::error_code ec) {
    if (ec || complete_ || attempt != attempt_) return;
    check(attempt);
  });
}

bool RendezvousWatch::on_arrivals(std::int64_t arrived) {
  if (complete_ || arrived < hooks_.world_size()) return false;
  complete_ = true;
  timer_.cancel();
  return true;
}

void RendezvousWatch::cancel() { timer_.cancel(); }

void RendezvousWatch::check(int attempt) {
  const int world = hooks_.world_size();
  auto ev = hooks_.evidence();
  auto j = judge_rendezvous(ev, world, nnodes_, timeout_);
  if (j.verdict == RendezvousJudgment::Verdict::Complete) return;
  if (j.verdict == RendezvousJudgment::Verdict::NoEvidence) {
    // No local rank is provably waiting for another (yet: a slow import): nothing to name and no
    // proof of a hang. Look again after another period, until the ranks' count says complete.
    spdlog::debug("rendezvous watchdog: no evidence of a hang ({} of {} arrived, {} local ranks missing)",
                  ev.arrived ? std::to_string(*ev.arrived) : "?", world, j.missing.size());
    arm(attempt);
    return;
  }
  report_ = j.report;
  hooks_.timed_out(attempt, world, ev, j);
}

}  // namespace ddp::launcher
