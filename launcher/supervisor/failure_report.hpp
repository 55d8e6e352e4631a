#pragma once
// The failure report: an attempt's (or the job's) failed ranks and what they left behind → the
// summary text on stderr and the data of the `root_cause` event. Pure: the supervisor gathers the
// evidence (error files, last stderr lines, OOM evidence) and prints and emits the result.
//
//   ddp-launch: job FAILED after 1 attempt(s), exit code 1
//     Root cause: rank 1 (local 1) on node 0 (host), pid 123: exited with code 3 at 12:00:01
//       error file: ValueError: bad
//       last stderr lines:
//         …
//     Rank: rank 0 (local 0) on node 0 (host), pid 122: killed by SIGTERM (teardown) at 12:00:01
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "launcher/hang/progress_watchdog.hpp"
#include "launcher/supervisor/root_cause.hpp"
#include "launcher/supervisor/supervisor_machine.hpp"

namespace ddp::launcher {

// The torch elastic timer signalled the rank (launcher/hang/file_timer.hpp): the deadline it missed.
struct TimerKillEvidence {
  std::string scope_id;  // torch's default: "<file>#<line>" of the `with expires(...)`
  double deadline = 0;   // seconds since the epoch
  int signal = 0;
  double sent_at = 0;  // when the supervisor sent the signal
  int pid = 0;         // the process signalled: the rank's worker, or a process it started
};

// What the shell knows of one failed rank's worker.
struct RankEvidence {
  int rank = 0;        // global
  int group_rank = 0;  // the node's rank
  std::optional<ErrorFileRecord> error_file;
  std::optional<double> error_file_written;  // its mtime (seconds since the epoch)
  std::vector<std::string> last_stderr;      // the last lines, oldest first
  std::optional<std::string> oom;            // killed by the OOM killer: the evidence
  std::optional<TimerKillEvidence> timer_kill;
};

// Reads the rank's error file into `evidence` (nothing when it wrote none; an unreadable one says
// so in its message, launcher/supervisor/root_cause.hpp).
void read_error_file(const std::filesystem::path& path, RankEvidence& evidence);

struct FailureReportInput {
  bool final = false;  // the job's end (else an attempt before a restart)
  GroupState state = GroupState::Failed;
  int attempt = 0;
  int exit_code = 1;
  int stop_signal = 0;  // SupervisorMachine::stop_signal()
  bool rendezvous_timed_out = false;
  std::string rendezvous_report;        // the watchdog's finding, when it timed out
  std::string rendezvous_close_reason;  // the dynamic rendezvous ended the job; empty: it did not
  bool hang_detected = false;           // SupervisorMachine::hang_detected()
  std::optional<HangVerdict> hang;      // the progress watchdog's verdict (launcher/hang/progress_watchdog.hpp)
  std::string hang_evidence;            // its stacks' summary and files (launcher/hang/hang_response.hpp), lines
  int node_rank = 0;                    // for ranks whose worker is unknown
  std::string node_name;
  std::vector<std::string> worker_argv;  // for the hint when torch is missing
  std::vector<RankFailure> failures;     // the machine's, in reap order
  std::optional<double> teardown_began;
  std::vector<std::optional<RankEvidence>> evidence;  // one per failure; nullopt: no worker known
};

// The `root_cause` event's data.
struct RootCauseEvent {
  int attempt = 0;
  int rank = 0;
  RankExit exit;
  std::string role;
  std::optional<std::string> error;  // the error file's message
};

struct FailureReport {
  std::string text;  // empty: nothing to report (no failure, not the job's end)
  std::optional<RootCauseEvent> root_cause;
};

FailureReport failure_report(const FailureReportInput& in);

// The machine's part of the input: state, attempt, what stopped the group, its failures. The
// shell adds the exit code, the rendezvous' findings, the node and each failure's evidence.
FailureReportInput failure_report_input(const SupervisorMachine& machine, bool final);

}  // namespace ddp::launcher
