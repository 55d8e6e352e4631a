#include "launcher/hang/progress_watch.hpp"

#include <utility>

#include "launcher/hang/heartbeat_files.hpp"

namespace ddp::launcher {

ProgressWatch::ProgressWatch(boost::asio::io_context& io, HangTimeout setting, Hooks hooks)
    : io_(io), timer_(io), judge_(setting), hooks_(std::move(hooks)) {}

ProgressWatch::~ProgressWatch() = default;

void ProgressWatch::watch_heartbeats(const std::filesystem::path& dir) {
  heartbeats_.reset();
  if (judge_.setting().mode == HangTimeout::Mode::Off) return;
  heartbeats_ = std::make_unique<HeartbeatFiles>(io_, dir, [this](int local_rank) { on_progress(local_rank); });
}

std::string ProgressWatch::heartbeat_file(int local_rank) const {
  return heartbeats_ ? heartbeats_->path_of(local_rank) : std::string();
}

void ProgressWatch::begin(int attempt, const std::vector<int>& global_ranks, int world_size) {
  judge_.begin(attempt, global_ranks, ProgressClock::now(), world_size);
  check();
}

void ProgressWatch::on_progress(int local_rank, ProgressTime t) {
  // Deadlines only move later, so the armed timer stays right; only a rank that became watched
  // (auto, after its warm-up) may bring an earlier one.
  if (judge_.on_progress(local_rank, t)) check();
}

void ProgressWatch::forget(int local_rank) { judge_.forget(local_rank); }

void ProgressWatch::stop() {
  judge_.stop();
  ++generation_;
  armed_for_.reset();
  timer_.cancel();
}

void ProgressWatch::check() {
  auto result = judge_.check(ProgressClock::now());
  if (auto* hung = std::get_if<ProgressWatchdog::Hung>(&result)) {
    stop();
    hooks_.hung(hung->verdict);
    return;
  }
  auto& due = std::get<ProgressWatchdog::NotDue>(result);
  if (due.notice && hooks_.notice) hooks_.notice(*due.notice);
  if (due.next) {
    arm(*due.next);
  } else if (armed_for_) {
    ++generation_;
    armed_for_.reset();
    timer_.cancel();
  }
}

void ProgressWatch::arm(ProgressTime at) {
  if (armed_for_ == at) return;
  armed_for_ = at;
  timer_.expires_at(at);
  timer_.async_wait([this, gen = ++generation_](boost::system::error_code ec) {
    if (ec || gen != generation_) return;
    armed_for_.reset();
    ++wakeups_;
    check();
  });
}

}  // namespace ddp::launcher
