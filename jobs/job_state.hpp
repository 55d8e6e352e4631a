#pragma once
// JobState: the life of a daemon job and its legal transitions (pure).
//
//   PENDING ──► STARTING ──► RUNNING ──► SUCCEEDED | FAILED
//      │           │  ▲         │  ▲
//      │           ▼  │         ▼  │
//      │        RESTARTING ◄────┘  (worker-group restart inside the supervisor, or a daemon retry)
//      ▼           │
//  CANCELLED ◄── CANCELLING ◄── (STARTING | RUNNING | RESTARTING)
#include <optional>
#include <string>
#include <string_view>

#include "common/events.hpp"

namespace ddp::jobs {

enum class JobState { Pending, Starting, Running, Restarting, Cancelling, Succeeded, Failed, Cancelled };

std::string_view state_name(JobState s);
std::optional<JobState> parse_state(std::string_view name);  // "RUNNING" or "running"
bool is_terminal(JobState s);
bool can_transition(JobState from, JobState to);

// What a line of the supervisor's event stream (`ddp-launch run --events`) means for the job,
// while the supervisor runs; `finished` is decided by the daemon (retry, cancel), not here.
// Returns the new state, or nullopt when the event changes nothing.
std::optional<JobState> state_after_supervisor_event(JobState current, const events::Payload& event);

}  // namespace ddp::jobs
