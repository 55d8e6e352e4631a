#include "launcher/rendezvous/restart_budget.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

namespace ddp::launcher {

std::string_view budget_mode_name(BudgetMode mode) { return mode == BudgetMode::Progress ? "progress" : "count"; }

std::string_view restart_verdict_name(RestartVerdict v) {
  switch (v) {
    case RestartVerdict::Restart: return "restart";
    case RestartVerdict::BudgetSpent: return "max_restarts";
    case RestartVerdict::NoProgress: return "no_progress";
  }
  return "restart";
}

std::optional<RestartVerdict> restart_verdict_named(std::string_view name) {
  for (auto v : {RestartVerdict::Restart, RestartVerdict::BudgetSpent, RestartVerdict::NoProgress}) {
    if (restart_verdict_name(v) == name) return v;
  }
  return std::nullopt;
}

int RestartDecision::exit_code() const {
  switch (verdict) {
    case RestartVerdict::Restart: return 0;
    case RestartVerdict::BudgetSpent: return 1;
    case RestartVerdict::NoProgress: return kNoProgressExitCode;
  }
  return 1;
}

std::string RestartDecision::text(const RestartBudgetPolicy& policy) const {
  std::string reached;
  if (policy.checkpoint_file) {
    reached = checkpoint ? fmt::format("the checkpoint file reads {}", *checkpoint) : "no checkpoint iteration yet";
  } else {
    reached = step ? fmt::format("reached step {}", *step) : "no step metric line";
  }
  switch (verdict) {
    case RestartVerdict::NoProgress:
      return fmt::format(
          "no progress in {} attempts in a row ({}): restarting again will not help; ending the job with exit code {} "
          "(--max-no-progress-restarts {})",
          no_progress_in_a_row, reached, kNoProgressExitCode, policy.max_no_progress_restarts);
    case RestartVerdict::BudgetSpent:
      return fmt::format("restart budget spent ({}; --max-restarts {}{})", reached, policy.max_restarts,
                         policy.mode == BudgetMode::Progress ? " counting restarts without progress" : "");
    case RestartVerdict::Restart: break;
  }
  return fmt::format("{}{}, {} restart(s) left", progressed ? "progress: " : "no progress: ", reached, restarts_left);
}

RestartBudget::RestartBudget(RestartBudgetPolicy policy, std::optional<std::int64_t> checkpoint_at_start)
    : policy_(policy), best_checkpoint_(checkpoint_at_start) {}

bool RestartBudget::progressed(const ProgressMark& mark) {
  if (policy_.checkpoint_file) {
    if (!mark.checkpoint || (best_checkpoint_ && *mark.checkpoint <= *best_checkpoint_)) return false;
    best_checkpoint_ = mark.checkpoint;
    return true;
  }
  if (!mark.step || (best_step_ && *mark.step <= *best_step_)) return false;
  best_step_ = mark.step;
  return true;
}

void RestartBudget::raise_baseline(std::optional<std::int64_t> checkpoint) {
  if (checkpoint && (!best_checkpoint_ || *checkpoint > *best_checkpoint_)) best_checkpoint_ = checkpoint;
}

RestartDecision RestartBudget::on_failure(const ProgressMark& mark) {
  RestartDecision d;
  d.checkpoint = mark.checkpoint;
  d.step = mark.step;
  d.progressed = progressed(mark);
  // Progress is measurable only with a checkpoint file or once some attempt printed a step: a job
  // with neither gives no evidence of a loop, and is restarted as torchrun would (its --max-restarts).
  const bool measurable = policy_.checkpoint_file || best_step_.has_value();
  no_progress_in_a_row_ = d.progressed || !measurable ? 0 : no_progress_in_a_row_ + 1;
  d.no_progress_in_a_row = no_progress_in_a_row_;
  d.charged = policy_.mode == BudgetMode::Count || !d.progressed;
  // --max-restarts first: a job that spends it fails as it always did (exit 1); the no-progress
  // limit ends only a loop the budget would have let go on.
  if (d.charged && charged_ >= policy_.max_restarts) {
    d.verdict = RestartVerdict::BudgetSpent;
  } else if (!d.progressed && no_progress_in_a_row_ > policy_.max_no_progress_restarts) {
    d.verdict = RestartVerdict::NoProgress;
  } else if (d.charged) {
    ++charged_;
  }
  if (d.verdict != RestartVerdict::Restart) d.charged = false;
  d.restarts_left = restarts_left();
  return d;
}

std::chrono::milliseconds restart_delay(std::chrono::milliseconds backoff, std::chrono::milliseconds min_interval,
                                        std::chrono::milliseconds since_last_start) {
  return std::max(backoff, min_interval - since_last_start);
}

std::optional<std::int64_t> parse_checkpoint_iteration(std::string_view text) {
  auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

}  // namespace ddp::launcher
