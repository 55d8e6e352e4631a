// The supervisor between two attempts: the failed one's pipes drained, its summary, the health gate
// (launcher/supervisor/gpu_release_gate.hpp), the back-off, and the restart timeline until the new
// attempt's first progress. The class: supervisor_run.hpp.
#include "launcher/supervisor/supervisor_run.hpp"

namespace ddp::launcher {

void Supervisor::perform(const action::ArmBackoff& a) {
  // launcher/supervisor/restart_timeline.hpp: from the failure seen, the group is gone now.
  timeline_.begin(a.attempt - 1, machine_.teardown_began().value_or(stopping_at_));
  timeline_.note(RestartPhase::GroupStopped, now_seconds());
  sweep();
  if (rdzv_ && machine_.stopped_by_round()) {
    spdlog::info("workers stopped; joining the next rendezvous round");
    next_attempt_ = a.attempt;
    join_round();
    return;
  }
  // The summary quotes each rank's last stderr lines: let the failed attempt's pipes drain
  // first (briefly, as at the end of the job), then report and restart.
  pending_restart_ = a;
  drain_timer_.expires_after(std::chrono::milliseconds(500));
  drain_timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) restart_after_drain();
  });
  maybe_restart_drained();
}

void Supervisor::maybe_restart_drained() {
  if (!pending_restart_ || !workers_.drained()) return;
  drain_timer_.cancel();
  restart_after_drain();
}

void Supervisor::restart_after_drain() {
  if (!pending_restart_) return;
  const auto a = *pending_restart_;
  pending_restart_.reset();
  out_.flush();
  const bool fresh_filestore = report_failures(false);
  out_.console.drain(std::chrono::seconds(2));  // the failure summary first, then the restart
  // Its cause is gone: no back-off (launcher/supervisor/filestore_watch.hpp).
  const auto backoff = fresh_filestore ? std::chrono::milliseconds(0) : a.after;
  // --min-restart-interval: attempts start at least that far apart.
  const auto since_start =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - attempt_started_);
  const auto after = restart_delay(backoff, config_.min_restart_interval, since_start);
  const auto& decision = machine_.restart_decision();
  const std::string budget = decision ? decision->text(machine_.budget_policy()) : std::string();
  if (rdzv_) {
    // The rendezvous host decides at the next round, for the job: that node logs and emits it then.
    spdlog::warn(
        "attempt {} failed; joining the next rendezvous round to restart the job (its restart budget is "
        "kept by the rendezvous host: --max-restarts {} per job)",
        a.attempt - 1, config_.max_restarts);
  } else if (fresh_filestore) {
    spdlog::warn(
        "attempt {} failed on a FileStore an earlier run left: {}; restarting the worker group as attempt "
        "{} at once (--max-restarts {})",
        a.attempt - 1, std::exchange(stale_removed_, {}), a.attempt, config_.max_restarts);
  } else {
    spdlog::warn("attempt {} failed; restarting the worker group as attempt {} (--max-restarts {}) in {} ms{}{}",
                 a.attempt - 1, a.attempt, config_.max_restarts, after.count(),
                 after > backoff ? " (--min-restart-interval)" : "", budget.empty() ? "" : "; " + budget);
  }
  if (!rdzv_) events_.emit(restarting_event(a.attempt, decision, machine_.restarts_left(), after));
  // The health gate (launcher/supervisor/gpu_release_gate.hpp): the dead ranks' GPU memory first.
  gpu_gate_.wait(failed_attempt_pids(), [this, a, after](const GpuReleaseGate::Outcome& o) {
    if (o.gated) timeline_.note(RestartPhase::GpuReleased, now_seconds());
    if (o.gated && !o.released) {
      spdlog::warn(
          "the failed attempt's GPU memory is not free after {:.1f} s (--gpu-release-timeout): {}; "
          "restarting anyway",
          o.waited_s, fmt::join(o.held, "; "));
    } else if (o.gated && o.waited_s >= 0.05) {
      spdlog::info("the failed attempt's GPU memory was freed in {:.2f} s", o.waited_s);
    }
    const auto waited = std::chrono::milliseconds(static_cast<long long>(o.waited_s * 1000));
    restart_after_gate(a, after > waited ? after - waited : std::chrono::milliseconds(0));
  });
}

std::vector<unsigned> Supervisor::failed_attempt_pids() const {
  std::vector<unsigned> pids;
  for (const auto& r : plan_) {
    if (const Worker* w = workers_.of(r.local_rank)) pids.push_back(static_cast<unsigned>(w->pid));
  }
  return pids;
}

void Supervisor::restart_after_gate(const action::ArmBackoff& a, std::chrono::milliseconds after) {
  if (machine_.state() != GroupState::Restarting) return;  // a signal ended the job meanwhile
  if (rdzv_) {
    // Every restart goes through a new round: the others learn of it and restart too.
    next_attempt_ = a.attempt;
    join_round();
    return;
  }
  backoff_timer_.expires_after(after);
  backoff_timer_.async_wait([this, attempt = a.attempt](boost::system::error_code ec) {
    if (!ec) dispatch(input::BackoffExpired{attempt});
  });
}

void Supervisor::on_attempt_heard_from(int attempt, bool after_rendezvous_only) {
  if (!timeline_.active() || timeline_.attempt() != attempt || attempt != machine_.attempt()) return;
  const double now = now_seconds();
  timeline_.note(RestartPhase::InterpreterReady, now);
  if (after_rendezvous_only && !timeline_.has(RestartPhase::StoreReached)) return;
  if (!timeline_.note(RestartPhase::FirstProgress, now)) return;
  spdlog::info("attempt {}: {}", attempt, timeline_.summary());
  end_timeline(attempt);
}

void Supervisor::end_timeline(int attempt) {
  if (timeline_.active() && timeline_.attempt() == attempt && timeline_.has(RestartPhase::SpawnBegan)) {
    events_.emit(timeline_.finish());
  }
}

void Supervisor::on_metric_row(const MetricRow& row) {
  if (row.step_given) on_attempt_heard_from(row.attempt, /*after_rendezvous_only=*/false);
  // A step the line named is the restart budget's progress (launcher/rendezvous/restart_budget.hpp).
  if (row.step_given && row.attempt == machine_.attempt() &&
      (!machine_.progress().step || *row.step > *machine_.progress().step)) {
    machine_.on(input::ProgressSeen{row.attempt, {.checkpoint = {}, .step = row.step}});
  }
  if (!stragglers_) return;
  const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  auto v = stragglers_->on_row(row, now);
  if (!v) return;
  out_.console.write(stderr,
                     fmt::format("[ddp-launch] warning: {}\n", straggler_warning(*v, stragglers_->threshold())));
  events_.emit(straggler_event(row.attempt, *v));
}

}  // namespace ddp::launcher
