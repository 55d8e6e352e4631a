#pragma once
// The daemon's jobs in memory: each job's record, spec, run memory and timers (ManagedJob), and the
// book of them all (JobBook) that the lifecycle (job_manager.hpp) writes and the views
// (job_views.hpp) read. Not for anything outside those two.
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "jobs/executor.hpp"
#include "jobs/job_db.hpp"
#include "jobs/job_errors.hpp"
#include "jobs/job_spec.hpp"
#include "jobs/run_outcome.hpp"

namespace ddp::jobs {

struct ManagedJob {
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
  // JSON texts for list (summary) and get (detail), valid while cached_at == the book's generation.
  mutable std::string summary, detail;
  mutable std::uint64_t summary_at = 0, detail_at = 0;

  void reset_run() { run = {}; }
  // Whether a run of it lives (a supervisor's pid or a Slurm job id is recorded).
  bool run_live() const { return rec.pid != 0 || !rec.external_id.empty(); }
};

// What the job database keeps of the job's run, for its executor.
inline RunHandle run_handle(const JobRecord& r) { return {r.pid, r.pid_start_time, r.external_id}; }

// The job database's health (job_persistence.cpp): while it refuses writes (a full state
// directory), since when, why, how often, and the retry's current back-off.
struct WriteTrouble {
  std::string error;
  double since = 0;
  std::uint64_t failures = 0;
  std::chrono::milliseconds backoff{0};
};

struct JobBook {
  std::map<JobId, std::unique_ptr<ManagedJob>> jobs;
  std::uint64_t generation = 1;  // bumped by every change of a job or of the queue
  std::uint64_t submitted_total = 0;
  std::uint64_t restarts_total = 0;
  // Writes that failed (job_persistence.cpp): the jobs to write again, and the episode's facts.
  std::set<JobId> unsaved;
  std::optional<WriteTrouble> write_trouble;

  ManagedJob& find(JobId id);  // throws JobError NotFound
  const ManagedJob& find(JobId id) const;
  bool exists(JobId id) const { return jobs.count(id) > 0; }
};

}  // namespace ddp::jobs
