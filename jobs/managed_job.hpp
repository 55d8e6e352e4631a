#pragma once
// JobManager's record of one job, shared by its source files (job_manager.cpp: the live loop;
// job_recovery.cpp: a restarted daemon's recovery; job_views.cpp: what the API shows). Not for
// anything outside JobManager.
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_manager.hpp"
#include "jobs/run_outcome.hpp"

namespace ddp::jobs {

struct JobManager::Job {
  JobRecord rec;
  JobSpec spec;
  bool spec_ok = true;
  bool submitting = false;  // a run is being started (sbatch in flight); no handle yet
  std::optional<int> events_watch;
  RunMemory run;  // this run, from its event stream (run_outcome.hpp)
  // Cancel or timeout in progress:
  bool cancel_requested = false;
  JobState cancel_final = JobState::Cancelled;
  std::string cancel_reason;
  std::unique_ptr<boost::asio::steady_timer> timeout_timer, kill_timer, retry_timer;
  // Not in the database yet (job_persistence.cpp: the state directory was full): its transitions
  // in order, and the byte ranges of its runs' event files whose rows are still to be written.
  struct EventRange {
    std::string run_dir;
    int run = 0;
    std::int64_t from = 0, to = 0;
  };
  std::vector<TransitionRow> unsaved_transitions;
  std::vector<EventRange> unsaved_events;
  // JSON texts for list (summary) and get (detail), valid while cached_at == the generation.
  mutable std::string summary, detail;
  mutable std::uint64_t summary_at = 0, detail_at = 0;

  void reset_run() { run = {}; }
};

}  // namespace ddp::jobs
