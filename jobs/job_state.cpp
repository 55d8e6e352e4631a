#include "jobs/job_state.hpp"

#include <array>
#include <cctype>

namespace ddp::jobs {

namespace {
constexpr std::array<std::string_view, 8> kNames = {"PENDING",    "STARTING",  "RUNNING", "RESTARTING",
                                                    "CANCELLING", "SUCCEEDED", "FAILED",  "CANCELLED"};
}

std::string_view state_name(JobState s) { return kNames[static_cast<std::size_t>(s)]; }

std::optional<JobState> parse_state(std::string_view name) {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (std::size_t i = 0; i < kNames.size(); ++i) {
    if (kNames[i] == upper) return static_cast<JobState>(i);
  }
  return std::nullopt;
}

bool is_terminal(JobState s) { return s == JobState::Succeeded || s == JobState::Failed || s == JobState::Cancelled; }

bool can_transition(JobState from, JobState to) {
  using S = JobState;
  switch (from) {
    case S::Pending: return to == S::Starting || to == S::Cancelled;
    // STARTING → PENDING: the daemon restarted before the supervisor's pid was recorded.
    case S::Starting:
      return to == S::Running || to == S::Restarting || to == S::Cancelling || to == S::Succeeded || to == S::Failed ||
             to == S::Pending;
    case S::Running: return to == S::Restarting || to == S::Cancelling || to == S::Succeeded || to == S::Failed;
    // RESTARTING → STARTING: a daemon retry launches a new supervisor; → RUNNING: the supervisor's
    // own worker-group restart came up; → CANCELLED: cancelled while waiting out the back-off.
    case S::Restarting:
      return to == S::Starting || to == S::Running || to == S::Cancelling || to == S::Cancelled || to == S::Succeeded ||
             to == S::Failed;
    // A job that ends on its own before the cancel lands keeps its true outcome.
    case S::Cancelling: return to == S::Cancelled || to == S::Succeeded || to == S::Failed;
    case S::Succeeded:
    case S::Failed:
    case S::Cancelled: return false;
  }
  return false;
}

std::optional<JobState> state_after_supervisor_event(JobState current, const events::Payload& event) {
  if (current == JobState::Cancelling || is_terminal(current)) return std::nullopt;
  if (std::holds_alternative<events::RankStarted>(event) || std::holds_alternative<events::RendezvousComplete>(event)) {
    if (current == JobState::Starting || current == JobState::Restarting) return JobState::Running;
    return std::nullopt;
  }
  if (std::holds_alternative<events::Restarting>(event)) {
    if (current == JobState::Running || current == JobState::Starting) return JobState::Restarting;
  }
  return std::nullopt;
}

}  // namespace ddp::jobs
