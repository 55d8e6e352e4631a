#pragma once
// SupervisorMachine: the supervisor's decisions as a pure state machine, in torchelastic's
// vocabulary. Inputs go in (a rank exited, a signal, a timer fired); actions come out
// (spawn the group, signal it, arm a timer, reset the store, finish). No processes, no clocks:
// the shell (Supervisor) performs the actions and feeds back what happened.
//
//   INIT (waiting for the first rendezvous round): handled signal → INTERRUPTED at once
//   start → spawn attempt 0 → RUNNING
//   RUNNING: all ranks exit 0 → SUCCEEDED
//            first non-zero exit → STOPPING(failure): SIGTERM every group, arm grace
//            handled signal      → STOPPING(signal): forward it, arm grace
//            rendezvous timeout, hang detected → STOPPING(failure), as a failed rank
//   STOPPING: grace fires → SIGKILL; second SIGINT → SIGKILL at once; a spawn cut short by the
//             stop (SpawnAbandoned): the ranks never started count as gone
//             last rank gone → restart (if failure and budget left: backoff, reset store, respawn)
//                              or FAILED / INTERRUPTED
//   Finishing (after Finish): DRAINING the workers' last output → OutputDrained → a node of a
//             dynamic rendezvous joins the exit barrier (JoinExitBarrier → ExitBarrierPassed) →
//             Exit. A handled signal while finishing stops the waiting: Exit with 128+signo.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "launcher/rendezvous/restart_budget.hpp"

namespace ddp::launcher {

enum class GroupState { Init, Running, Stopping, Restarting, Succeeded, Failed, Interrupted };
std::string_view group_state_name(GroupState s);

// After the group's end (Finish): what the supervisor still waits for before it exits.
enum class FinishStage { NotFinishing, Draining, AtExitBarrier, Exited };

struct RankExit {
  int local_rank = 0;
  int pid = 0;
  int exit_code = 0;  // meaningful when signal == 0
  int signal = 0;     // terminating signal, 0 if it exited
  double time = 0;    // seconds since the epoch, when the shell reaped it (one time per reap pass)
  bool failed() const { return signal != 0 || exit_code != 0; }
};

// A failed exit and what the machine knows of its timing. `after_teardown`: reaped after the
// teardown began (a later time than the exit that began it, or any exit while a signal, the
// rendezvous or a round stops the group); `by_teardown_signal`: it also died of a signal the
// supervisor had sent. root_cause.hpp weighs this with the rank's own records to name the root cause.
struct RankFailure {
  RankExit exit;
  bool after_teardown = false;
  bool by_teardown_signal = false;
};

// The machine's inputs (input::, the variant Input): what the shell saw happen. Not the run's event
// stream, common/events.hpp's events:: (the --events file, the daemon's contract).
namespace input {
struct Start {};
struct RankExited {
  RankExit exit;
};
struct SignalReceived {
  int signo;
};
struct GraceExpired {
  int attempt;
};
// Not every rank reached the store in time (the shell's rendezvous watchdog): a failed attempt.
struct RendezvousTimeout {
  int attempt;
};
// A rank made no progress for the hang timeout (the shell's progress watchdog): a failed attempt,
// restarted within the budget unless the policy says fail (--on-hang fail).
struct HangDetected {
  int attempt;
};
struct BackoffExpired {
  int attempt;
};
// Dynamic rendezvous: the round this node runs in is over (a node was lost, joined or restarted
// elsewhere): stop the group and restart it. `closed`: the job is over elsewhere (or the rendezvous
// failed): stop and finish as failed, with `restart`'s exit code when the job's budget ended it.
struct RoundEnded {
  bool closed = false;
  std::optional<RestartDecision> restart;
};
// Dynamic rendezvous: the node was admitted to a new round after its group stopped. The rendezvous
// host keeps the job's restart budget and charges a failed round once (whichever nodes failed, only
// when the membership is unchanged: a failure caused by a lost node is the membership change's);
// `restart` is its decision, the same on every node.
struct RoundAdmitted {
  bool membership_changed = false;
  std::optional<RestartDecision> restart;
};
// The shell stopped spawning the group after a signal or a failure stopped it: local ranks from
// `first_unspawned` on never started, so the teardown must not wait for them.
struct SpawnAbandoned {
  int attempt;
  int first_unspawned;
};
// What the running attempt reached (launcher/rendezvous/restart_budget.hpp): the checkpoint file's
// iteration as last read (replaces the one before), the highest step seen (kept when higher).
// Weighed when the attempt fails.
struct ProgressSeen {
  int attempt;
  ProgressMark mark;
};
// Finishing: the workers' pipes drained (or the shell stopped waiting for them).
struct OutputDrained {};
// Finishing (dynamic rendezvous): every node finished, or the barrier gave up.
struct ExitBarrierPassed {};
}  // namespace input
using Input =
    std::variant<input::Start, input::RankExited, input::SignalReceived, input::GraceExpired, input::RendezvousTimeout,
                 input::HangDetected, input::BackoffExpired, input::RoundEnded, input::RoundAdmitted,
                 input::SpawnAbandoned, input::ProgressSeen, input::OutputDrained, input::ExitBarrierPassed>;

namespace action {
struct ResetStore {};  // fresh store state for the attempt (torch 2.x uses no per-attempt prefix)
struct SpawnGroup {
  int attempt;
};
struct SignalGroup {
  int signo;  // to every live worker's process group
};
struct ArmGrace {
  int attempt;
  std::chrono::milliseconds after;
};
struct ArmBackoff {
  int attempt;  // the attempt about to start
  std::chrono::milliseconds after;
};
struct Finish {
  int exit_code;  // the group is over: drain its last output (then OutputDrained)
};
struct JoinExitBarrier {
  int exit_code;  // tell the rendezvous how this node's job ended; ExitBarrierPassed when all did
};
struct Exit {
  int exit_code;  // the supervisor's: report, clean up, stop the loop
};
}  // namespace action
using Action = std::variant<action::ResetStore, action::SpawnGroup, action::SignalGroup, action::ArmGrace,
                            action::ArmBackoff, action::Finish, action::JoinExitBarrier, action::Exit>;

struct SupervisorPolicy {
  int nproc = 1;
  int max_restarts = 0;
  std::chrono::milliseconds shutdown_grace{30000};
  std::chrono::milliseconds restart_backoff{0};  // before attempt 2 (attempt 1 starts at once); doubles, capped
  std::chrono::milliseconds max_backoff{10000};
  // Dynamic rendezvous: a failed group always rejoins, and the rendezvous host charges the job's one
  // budget (RoundAdmitted and RoundEnded bring its decision); this machine's own budget is unused.
  bool rendezvous_budget = false;
  // Dynamic rendezvous: before it exits, the node waits until every node finished (the host keeps
  // the store up for them).
  bool exit_barrier = false;
  // --on-hang restart (true) or fail: whether a hang may be restarted (within max_restarts).
  bool restart_on_hang = true;
  // The progress-aware budget (restart_budget.hpp); its max_restarts is the one above.
  int max_no_progress_restarts = 3;
  BudgetMode budget_mode = BudgetMode::Count;
  bool checkpoint_file = false;
  std::optional<std::int64_t> checkpoint_at_start;  // the file's iteration before attempt 0
};

class SupervisorMachine {
 public:
  explicit SupervisorMachine(SupervisorPolicy policy);

  std::vector<Action> on(const Input& e);

  GroupState state() const { return state_; }
  int attempt() const { return attempt_; }
  int live_ranks() const;
  // Failures of the attempt that ended last, in the order they were observed (ranks reaped together
  // in rank order). Which one is the root cause is attribute_failures' decision (root_cause.hpp).
  const std::vector<RankFailure>& failures() const { return failures_; }
  // When the exit that began this attempt's teardown was reaped; nullopt when no failure began it.
  std::optional<double> teardown_began() const { return teardown_began_; }
  std::optional<int> finished_with() const { return exit_code_; }
  FinishStage finish_stage() const { return finish_stage_; }
  // The handled signal that stopped the group, 0 when a rank's failure did (or nothing yet).
  int stop_signal() const { return stop_signal_; }
  // The attempt that ended last was stopped because its rendezvous timed out.
  bool rendezvous_timed_out() const { return rendezvous_timed_out_; }
  // The attempt that ended last was stopped because a rank hung (HangDetected).
  bool hang_detected() const { return hang_detected_; }
  // The last stop came from the dynamic rendezvous (RoundEnded), not from a rank of this node.
  bool stopped_by_round() const { return round_stop_ != RoundStop::None; }
  // The budget's last decision on a failed attempt (restart or end, and why); nullopt before any.
  // Dynamic rendezvous: the job's, from the rendezvous host.
  const std::optional<RestartDecision>& restart_decision() const { return restart_decision_; }
  int restarts_left() const { return restart_decision_ ? restart_decision_->restarts_left : policy_.max_restarts; }
  // Dynamic rendezvous: the group that stopped last failed by itself (not because its round ended):
  // its next join says so.
  bool own_failure() const { return own_failure_; }
  const SupervisorPolicy& policy() const { return policy_; }
  const RestartBudgetPolicy& budget_policy() const { return budget_.policy(); }
  const ProgressMark& progress() const { return progress_; }  // the current attempt's

 private:
  std::vector<Action> handle(const input::Start&);
  std::vector<Action> handle(const input::RankExited&);
  std::vector<Action> handle(const input::SignalReceived&);
  std::vector<Action> handle(const input::GraceExpired&);
  std::vector<Action> handle(const input::RendezvousTimeout&);
  std::vector<Action> handle(const input::HangDetected&);
  std::vector<Action> handle(const input::BackoffExpired&);
  std::vector<Action> handle(const input::RoundEnded&);
  std::vector<Action> handle(const input::RoundAdmitted&);
  std::vector<Action> handle(const input::SpawnAbandoned&);
  std::vector<Action> handle(const input::ProgressSeen&);
  // The budget weighs the failed attempt's progress: false (and the job finishes) when it is spent.
  bool charge_restart(std::vector<Action>& finished);
  std::vector<Action> handle(const input::OutputDrained&);
  std::vector<Action> handle(const input::ExitBarrierPassed&);
  std::vector<Action> finishing(const Input& e);
  std::vector<Action> spawn_attempt();
  std::vector<Action> stop_group(int signo);
  action::SignalGroup signal_group(int signo);  // remembered: a rank that dies of it was stopped by us
  std::vector<Action> group_gone();
  // The wait before restart number `restart` (1-based): none for the first, then restart_backoff
  // doubling per restart up to max_backoff.
  std::chrono::milliseconds backoff_before(int restart) const;
  std::vector<Action> finish(GroupState final_state, int code);

  SupervisorPolicy policy_;
  GroupState state_ = GroupState::Init;
  int attempt_ = 0;
  std::vector<bool> alive_;
  std::vector<bool> exited_ok_;
  std::vector<RankFailure> failures_;
  std::optional<double> teardown_began_;
  std::vector<int> teardown_signals_;  // what this attempt's teardown sent so far
  bool rendezvous_timed_out_ = false;
  bool hang_detected_ = false;
  int stop_signal_ = 0;     // the handled signal that stopped the group (0: a failure did)
  int restarts_spent_ = 0;  // restarts after failures (membership changes are free): the back-off's count
  RestartBudget budget_;
  ProgressMark progress_;  // the current attempt's
  std::optional<RestartDecision> restart_decision_;
  enum class RoundStop { None, Rejoin, Closed } round_stop_ = RoundStop::None;
  bool own_failure_ = false;  // dynamic rendezvous: the group failed; told to the host at the next join
  int closed_exit_code_ = 1;  // the rendezvous closed the job: its budget's exit code, else 1
  std::optional<int> exit_code_;
  FinishStage finish_stage_ = FinishStage::NotFinishing;
};

}  // namespace ddp::launcher
