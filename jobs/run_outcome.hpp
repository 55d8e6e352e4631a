#pragma once
// Pure: what one run of a job has said so far, and what its end means. The daemon folds every
// supervisor event into a RunMemory (live, and again when a restarted daemon replays the part of
// the event file it had applied before), judges the run when it ends, and asks decide_retry
// whether to launch it again.
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/events.hpp"
#include "common/exit_status.hpp"
#include "jobs/job_spec.hpp"

namespace ddp::jobs {

struct RunMemory {
  bool finished_seen = false;             // the supervisor's `finished` event
  std::optional<int> finished_exit;       // its exit_code
  std::optional<int> first_failure_code;  // of the current worker-group attempt (128 + N for signal N)
  std::string first_failure;              // "rank 1 exited with code 3: ValueError: boom"
  std::string previous_failure;           // the attempt before a `restarting`: what it restarts after
  std::string end_reason;                 // how the executor saw the run end ("Slurm job 12 COMPLETED ...")
  // The supervisor's straggler verdicts (launcher/hang/straggler_detector.hpp): each rank's latest, and
  // when it came (the event's time). Reported, not a failure: the job goes on.
  struct StragglerSeen {
    events::Straggler verdict;
    double time = 0;
  };
  std::map<int, StragglerSeen> stragglers;  // rank → its latest verdict in this run
  // The current attempt was stopped by the hang watchdog: its text is the failure, and the exit
  // code judged (decide_retry) is the suspect rank's (128 + SIGABRT when its stacks were taken,
  // else killed by the teardown: 128 + SIGTERM, or + SIGKILL when it ignored that).
  std::optional<int> hang_suspect;
  // The supervisor's restart budget after its last restart (launcher/rendezvous/restart_budget.hpp):
  // the restarts left under --max-restarts and the restarts without progress in a row.
  std::optional<int> restarts_left;
  int no_progress_restarts = 0;
};

// "rank 1 hung: no progress for 5.0 s (--hang-timeout 5s); rank 0 waited": a hang_detected event
// as the job's reason says it.
std::string hang_text(const events::HangDetected& h);

// Folds one supervisor event into `m`: rank_exited / root_cause (the failure; root_cause is the
// verdict and replaces a rank_exited), hang_detected (the failure, whatever the ranks' exits that
// follow say; the suspect's exit gives the code), restarting (a fresh attempt: the failure moves to
// previous_failure), filestore_found (the FileStore the ranks met on: appended to the failure),
// finished (the supervisor's exit code), straggler (the rank's latest verdict).
// Other events change nothing here.
void absorb_event(RunMemory& m, const events::Event& ev);

// The executor's own report of the end (no event stream: Slurm).
void absorb_executor_end(RunMemory& m, bool succeeded, int exit_code, const std::string& reason);

// The complete lines of `data` as events (common/events.hpp), each with its JSON as written (the
// daemon's database keeps that: fields this reader does not know included); `consumed`: bytes up
// to the last newline (a partial line waits for the rest); `unreadable`: one message per line that
// is not JSON or not a well-formed event.
struct EventLine {
  events::Event event;
  nlohmann::json raw;
};
struct EventLines {
  std::vector<EventLine> events;
  std::size_t consumed = 0;
  std::vector<std::string> unreadable;
};
EventLines parse_event_lines(std::string_view data);

// How a run ended, as the daemon saw it.
struct RunEnd {
  std::optional<ExitStatus> supervisor_exit;  // the supervisor's, when it was the daemon's child (reaped)
  std::optional<int> recorded_exit;           // the job's exit code so far
  int pid = 0;
  std::string run_dir;
};
struct RunVerdict {
  std::optional<int> exit_code;  // the job's exit code (128 + N for signal N)
  bool succeeded = false;
  std::string text;  // success: how it ended; failure: what failed
};
RunVerdict judge_run(const RunMemory& m, const RunEnd& end);

// Whether a failed run is relaunched, and after how long.
struct RetryDecision {
  bool retry = false;
  double delay_s = 0;
  std::string reason;  // why not (or why), for the job's reason field
};
// `runs_so_far`: runs launched, the failed one included. `exit_code`: the first failing rank's
// code (128+signal for a signal), nullopt if unknown. `log_match`: a no-retry pattern that matched.
RetryDecision decide_retry(const JobSpec& spec, int runs_so_far, std::optional<int> exit_code,
                           const std::optional<std::string>& log_match);

}  // namespace ddp::jobs
