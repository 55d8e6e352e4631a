#include "launcher/supervisor/supervisor_machine.hpp"

#include <algorithm>
#include <utility>

#include "platform/signal_numbers.hpp"

namespace ddp::launcher {

std::string_view group_state_name(GroupState s) {
  switch (s) {
    case GroupState::Init: return "INIT";
    case GroupState::Running: return "RUNNING";
    case GroupState::Stopping: return "STOPPING";
    case GroupState::Restarting: return "RESTARTING";
    case GroupState::Succeeded: return "SUCCEEDED";
    case GroupState::Failed: return "FAILED";
    case GroupState::Interrupted: return "INTERRUPTED";
  }
  return "?";
}

SupervisorMachine::SupervisorMachine(SupervisorPolicy policy)
    : policy_(policy),
      budget_(RestartBudgetPolicy{.max_restarts = policy.max_restarts,
                                  .max_no_progress_restarts = policy.max_no_progress_restarts,
                                  .mode = policy.budget_mode,
                                  .checkpoint_file = policy.checkpoint_file},
              policy.checkpoint_at_start) {}

std::vector<Action> SupervisorMachine::on(const Input& e) {
  if (exit_code_) return finishing(e);
  return std::visit([this](const auto& ev) { return handle(ev); }, e);
}

int SupervisorMachine::live_ranks() const { return static_cast<int>(std::count(alive_.begin(), alive_.end(), true)); }

std::vector<Action> SupervisorMachine::handle(const input::Start&) {
  if (state_ != GroupState::Init) return {};
  return spawn_attempt();
}

std::vector<Action> SupervisorMachine::spawn_attempt() {
  state_ = GroupState::Running;
  alive_.assign(static_cast<std::size_t>(policy_.nproc), true);
  exited_ok_.assign(static_cast<std::size_t>(policy_.nproc), false);
  failures_.clear();
  teardown_began_.reset();
  teardown_signals_.clear();
  rendezvous_timed_out_ = false;
  hang_detected_ = false;
  stop_signal_ = 0;
  round_stop_ = RoundStop::None;
  progress_ = {};
  return {action::ResetStore{}, action::SpawnGroup{attempt_}};
}

std::vector<Action> SupervisorMachine::handle(const input::RankExited& e) {
  const auto& x = e.exit;
  if (x.local_rank < 0 || x.local_rank >= policy_.nproc) return {};
  auto idx = static_cast<std::size_t>(x.local_rank);
  if (!alive_[idx]) return {};
  alive_[idx] = false;
  if (x.failed()) {
    RankFailure f{x};
    // Reaped in the same pass as the exit that began the teardown: it died before our signal.
    f.after_teardown = state_ == GroupState::Stopping && (!teardown_began_ || x.time > *teardown_began_);
    f.by_teardown_signal =
        f.after_teardown && x.signal != 0 &&
        std::find(teardown_signals_.begin(), teardown_signals_.end(), x.signal) != teardown_signals_.end();
    failures_.push_back(f);
  } else {
    exited_ok_[idx] = true;
  }
  if (state_ == GroupState::Running) {
    if (x.failed()) {
      teardown_began_ = x.time;
      return stop_group(sig::kTerm);
    }
    if (live_ranks() == 0) return finish(GroupState::Succeeded, 0);
    return {};
  }
  if (state_ == GroupState::Stopping && live_ranks() == 0) return group_gone();
  return {};
}

std::vector<Action> SupervisorMachine::stop_group(int signo) {
  state_ = GroupState::Stopping;
  if (live_ranks() == 0) return group_gone();
  return {signal_group(signo), action::ArmGrace{attempt_, policy_.shutdown_grace}};
}

action::SignalGroup SupervisorMachine::signal_group(int signo) {
  teardown_signals_.push_back(signo);
  return action::SignalGroup{signo};
}

std::vector<Action> SupervisorMachine::handle(const input::SignalReceived& e) {
  if (state_ == GroupState::Running) {
    stop_signal_ = e.signo;
    return stop_group(e.signo);
  }
  if (state_ == GroupState::Stopping) {
    if (stop_signal_ == 0) stop_signal_ = e.signo;                // a signal during failure teardown: no restart
    if (e.signo == sig::kInt) return {signal_group(sig::kKill)};  // Ctrl-C while stopping: no more waiting
    return {signal_group(e.signo)};
  }
  // Waiting for the first round (nothing spawned yet) or for the next attempt: nothing to stop.
  if (state_ == GroupState::Init || state_ == GroupState::Restarting) {
    stop_signal_ = e.signo;
    return finish(GroupState::Interrupted, 128 + e.signo);
  }
  return {};
}

std::vector<Action> SupervisorMachine::handle(const input::SpawnAbandoned& e) {
  if (state_ != GroupState::Stopping || e.attempt != attempt_) return {};
  for (auto i = static_cast<std::size_t>(std::max(e.first_unspawned, 0)); i < alive_.size(); ++i) alive_[i] = false;
  if (live_ranks() == 0) return group_gone();
  return {};
}

std::vector<Action> SupervisorMachine::handle(const input::GraceExpired& e) {
  if (state_ != GroupState::Stopping || e.attempt != attempt_ || live_ranks() == 0) return {};
  return {signal_group(sig::kKill)};
}

std::vector<Action> SupervisorMachine::handle(const input::RendezvousTimeout& e) {
  if (state_ != GroupState::Running || e.attempt != attempt_) return {};
  rendezvous_timed_out_ = true;  // a failure like a rank's: the restart budget applies
  return stop_group(sig::kTerm);
}

std::vector<Action> SupervisorMachine::handle(const input::HangDetected& e) {
  if (state_ != GroupState::Running || e.attempt != attempt_) return {};
  hang_detected_ = true;  // a failure like a rank's: the restart budget applies (--on-hang restart)
  return stop_group(sig::kTerm);
}

std::vector<Action> SupervisorMachine::handle(const input::RoundEnded& e) {
  if (e.closed && e.restart) {
    restart_decision_ = e.restart;
    closed_exit_code_ = e.restart->exit_code();
  }
  if (state_ == GroupState::Running) {
    round_stop_ = e.closed ? RoundStop::Closed : RoundStop::Rejoin;
    return stop_group(sig::kTerm);
  }
  if (state_ == GroupState::Stopping) {
    if (e.closed)
      round_stop_ = RoundStop::Closed;
    else if (round_stop_ == RoundStop::None && failures_.empty())
      round_stop_ = RoundStop::Rejoin;
    return {};
  }
  if (e.closed && (state_ == GroupState::Init || state_ == GroupState::Restarting)) {
    round_stop_ = RoundStop::Closed;
    return finish(GroupState::Failed, closed_exit_code_);
  }
  return {};
}

// The host charged the job's budget (or not): the same decision on every node. It never says stop
// here: a spent budget closes the rendezvous instead (RoundEnded, closed).
std::vector<Action> SupervisorMachine::handle(const input::RoundAdmitted& e) {
  if (state_ != GroupState::Restarting) return {};
  own_failure_ = false;
  if (e.restart) {
    restart_decision_ = e.restart;
    ++restarts_spent_;  // a failed round, wherever it failed: the back-off grows
  }
  return {};
}

std::vector<Action> SupervisorMachine::handle(const input::ProgressSeen& e) {
  if (e.attempt != attempt_) return {};
  if (e.mark.checkpoint) progress_.checkpoint = e.mark.checkpoint;
  if (e.mark.step && (!progress_.step || *e.mark.step > *progress_.step)) progress_.step = e.mark.step;
  return {};
}

bool SupervisorMachine::charge_restart(std::vector<Action>& finished) {
  restart_decision_ = budget_.on_failure(progress_);
  if (restart_decision_->verdict == RestartVerdict::Restart) return true;
  finished = finish(GroupState::Failed, restart_decision_->exit_code());
  return false;
}

std::vector<Action> SupervisorMachine::group_gone() {
  if (stop_signal_ != 0) return finish(GroupState::Interrupted, 128 + stop_signal_);
  if (round_stop_ == RoundStop::Closed) return finish(GroupState::Failed, closed_exit_code_);
  if (hang_detected_ && !policy_.restart_on_hang) return finish(GroupState::Failed, 1);  // --on-hang fail
  if (round_stop_ == RoundStop::Rejoin) {
    state_ = GroupState::Restarting;
    own_failure_ = false;
    return {action::ArmBackoff{attempt_ + 1, std::chrono::milliseconds(0)}};
  }
  if (policy_.rendezvous_budget) {
    // The host charges the job's budget when the next round closes with the same nodes
    // (RoundAdmitted); backs off as if it will, like the static mode: a failing group under a
    // dynamic rendezvous used to restart at once every time (500 restarts in 5 s).
    state_ = GroupState::Restarting;
    own_failure_ = true;
    return {action::ArmBackoff{attempt_ + 1, backoff_before(restarts_spent_ + 1)}};
  }
  std::vector<Action> finished;
  if (!charge_restart(finished)) return finished;
  ++restarts_spent_;
  state_ = GroupState::Restarting;
  return {action::ArmBackoff{attempt_ + 1, backoff_before(restarts_spent_)}};
}

// The first restart is immediate (as torchrun's); a group that keeps failing backs off
// exponentially from restart_backoff, so a crash loop does not spin.
std::chrono::milliseconds SupervisorMachine::backoff_before(int restart) const {
  std::chrono::milliseconds backoff{0};
  if (restart >= 2) {
    backoff = policy_.restart_backoff;
    for (int i = 2; i < restart && backoff < policy_.max_backoff; ++i) backoff *= 2;
    backoff = std::min(backoff, policy_.max_backoff);
  }
  return backoff;
}

std::vector<Action> SupervisorMachine::handle(const input::BackoffExpired& e) {
  if (state_ != GroupState::Restarting || e.attempt != attempt_ + 1) return {};
  attempt_ = e.attempt;
  return spawn_attempt();
}

std::vector<Action> SupervisorMachine::finish(GroupState final_state, int code) {
  state_ = final_state;
  exit_code_ = code;
  finish_stage_ = FinishStage::Draining;
  return {action::Finish{code}};
}

// The group is over: only the drain, the exit barrier and a signal that cuts them short matter.
std::vector<Action> SupervisorMachine::finishing(const Input& e) {
  if (finish_stage_ == FinishStage::Exited) return {};
  if (const auto* s = std::get_if<input::SignalReceived>(&e)) {
    exit_code_ = 128 + s->signo;  // torchrun's agent re-raises it: stop waiting
    finish_stage_ = FinishStage::Exited;
    return {action::Exit{*exit_code_}};
  }
  if (std::holds_alternative<input::OutputDrained>(e)) return handle(input::OutputDrained{});
  if (std::holds_alternative<input::ExitBarrierPassed>(e)) return handle(input::ExitBarrierPassed{});
  return {};
}

std::vector<Action> SupervisorMachine::handle(const input::OutputDrained&) {
  if (finish_stage_ != FinishStage::Draining) return {};
  if (policy_.exit_barrier) {
    finish_stage_ = FinishStage::AtExitBarrier;
    return {action::JoinExitBarrier{*exit_code_}};
  }
  finish_stage_ = FinishStage::Exited;
  return {action::Exit{*exit_code_}};
}

std::vector<Action> SupervisorMachine::handle(const input::ExitBarrierPassed&) {
  if (finish_stage_ != FinishStage::AtExitBarrier) return {};
  finish_stage_ = FinishStage::Exited;
  return {action::Exit{*exit_code_}};
}

}  // namespace ddp::launcher
