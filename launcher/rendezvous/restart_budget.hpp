#pragma once
// RestartBudget: whether a failed worker group may restart, weighing what the failed attempt
// achieved. Progress is the checkpoint iteration file advancing (`--checkpoint-file`, NVIDIA
// ft_launcher's contract: one integer, the last saved iteration) or, without one, a step metric
// line (`@ddp-metric step=N …`, a `step` --metric) past the highest step any earlier attempt reached.
//
//   --max-restarts N        restarts before the job fails (exit 1); with `--restart-budget progress`
//                           only the restarts after an attempt without progress are counted
//   --max-no-progress-restarts M
//                           restarts in a row without progress before the job ends with
//                           kNoProgressExitCode (a crash loop: restarting again cannot help)
//   --min-restart-interval  the least time from one attempt's start to the next's (restart_delay)
//
// Pure: values in, a decision out. Who holds it: a static run's supervisor (supervisor_machine.hpp),
// for its node; in a c10d job the rendezvous host (rendezvous_machine.hpp), for the whole job: one
// restart per failed round, whichever nodes failed, weighing the best progress any node reported
// (torchrun's per-agent budget lets each node spend its own: pytorch#108158). It lives here, with the
// rendezvous, because that is the lowest layer that holds one.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::launcher {

// The job ended because the group kept failing without progress (--max-no-progress-restarts).
// 1 is a failed job with its restart budget spent, 2 bad usage, 128+N a signal.
inline constexpr int kNoProgressExitCode = 3;

enum class BudgetMode { Count, Progress };  // --restart-budget count|progress
std::string_view budget_mode_name(BudgetMode mode);

struct RestartBudgetPolicy {
  int max_restarts = 0;
  int max_no_progress_restarts = 3;
  BudgetMode mode = BudgetMode::Count;
  bool checkpoint_file = false;  // progress is the checkpoint file's iteration, not steps
};

// What an attempt reached: the checkpoint file's iteration when it ended (empty: no file or not an
// integer), the highest step its ranks reported (empty: none).
struct ProgressMark {
  std::optional<std::int64_t> checkpoint;
  std::optional<double> step;
  bool operator==(const ProgressMark&) const = default;
};

enum class RestartVerdict { Restart, BudgetSpent, NoProgress };
// "restart", "max_restarts", "no_progress" (the finished event's gave_up words); nullopt: another word.
std::string_view restart_verdict_name(RestartVerdict v);
std::optional<RestartVerdict> restart_verdict_named(std::string_view name);

struct RestartDecision {
  RestartVerdict verdict = RestartVerdict::Restart;
  bool progressed = false;
  bool charged = false;                    // this restart counts against --max-restarts
  int no_progress_in_a_row = 0;            // failures without progress in a row, this one included
  int restarts_left = 0;                   // under --max-restarts, after this decision
  std::optional<std::int64_t> checkpoint;  // the iteration this attempt reached (checkpoint mode)
  std::optional<double> step;              // the step this attempt reached (step mode)
  int exit_code() const;                   // 1 or kNoProgressExitCode; 0 for Restart
  bool operator==(const RestartDecision&) const = default;
  // "no progress in 4 attempts in a row (--max-no-progress-restarts 3): …" or "checkpoint 120 → 180".
  std::string text(const RestartBudgetPolicy& policy) const;
};

class RestartBudget {
 public:
  // checkpoint_at_start: the file's iteration before the first attempt (an attempt must pass it).
  explicit RestartBudget(RestartBudgetPolicy policy, std::optional<std::int64_t> checkpoint_at_start = std::nullopt);

  // A failed attempt that reached `mark`: restart it, or end the job (and why).
  RestartDecision on_failure(const ProgressMark& mark);
  // The checkpoint file's iteration a node found before its first attempt (it joined a c10d job):
  // an attempt must pass the best of these to count as progress.
  void raise_baseline(std::optional<std::int64_t> checkpoint);
  int restarts_left() const { return policy_.max_restarts - charged_; }
  int charged() const { return charged_; }
  const RestartBudgetPolicy& policy() const { return policy_; }

 private:
  bool progressed(const ProgressMark& mark);

  RestartBudgetPolicy policy_;
  int charged_ = 0;
  int no_progress_in_a_row_ = 0;
  std::optional<std::int64_t> best_checkpoint_;
  std::optional<double> best_step_;
};

// The wait before the next attempt: the back-off, stretched so that attempts start at least
// min_interval apart (since_last_start: from the failed attempt's start to now).
std::chrono::milliseconds restart_delay(std::chrono::milliseconds backoff, std::chrono::milliseconds min_interval,
                                        std::chrono::milliseconds since_last_start);

// The checkpoint file's text: one integer, surrounding whitespace allowed; empty otherwise.
std::optional<std::int64_t> parse_checkpoint_iteration(std::string_view text);

}  // namespace ddp::launcher
