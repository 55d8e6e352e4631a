#pragma once
// JobViews: what the API and the dashboard show of the daemon's jobs, read-only: the JSON of a job
// (cached per generation of the book: at a thousand requests a second most of them change
// nothing), the list, a job's transitions and events, the host's slots, GPUs and queue, a job's log
// files and the metrics its spec's regexes find in its ranks' output, and the counts of /metrics.
// It changes nothing; the lifecycle (job_manager.hpp) does.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "jobs/daemon_metrics.hpp"
#include "jobs/executor.hpp"
#include "jobs/job_db.hpp"
#include "jobs/managed_job.hpp"
#include "jobs/scheduler.hpp"

namespace ddp::jobs {

class JobViews {
 public:
  using ExecutorOf = std::function<const Executor&(const ManagedJob&)>;
  JobViews(const JobBook& book, JobDb& db, const Scheduler& scheduler, const HostInventory& inventory,
           std::filesystem::path state_dir, ExecutorOf executor_of)
      : book_(book),
        db_(db),
        scheduler_(scheduler),
        inventory_(inventory),
        state_dir_(std::move(state_dir)),
        executor_of_(std::move(executor_of)) {}

  bool exists(JobId id) const { return book_.exists(id); }
  bool is_finished(JobId id) const;  // throws JobError NotFound

  // A job as the API answers it: the summary (list, submit, cancel) or the detail (get).
  nlohmann::json to_json(const ManagedJob& job, bool detail) const;
  std::string list_text(std::optional<JobState> state, std::size_t limit) const;
  std::string get_text(JobId id) const;
  nlohmann::json get(JobId id) const;
  nlohmann::json events(JobId id) const;
  nlohmann::json job_metrics(JobId id) const;
  JobCounts counts() const;  // GET /metrics (daemon_metrics.hpp renders them)

  // The log file of `rank` ("supervisor" for the supervisor's own output) in the job's latest
  // run and latest attempt; nullopt while it does not exist yet.
  std::optional<std::filesystem::path> log_path(JobId id, const std::string& rank, const std::string& stream) const;
  std::string run_dir(JobId id) const;  // the latest run's directory; "" before the first

  // The dashboard's views: the host's slots and GPUs (and their jobs), the queue in order and the
  // jobs by state; a job's transitions and events newer than a cursor (at most `limit` rows of
  // each), which advances past what it returns.
  struct TimelineCursor {
    std::int64_t transitions = 0, events = 0;
  };
  nlohmann::json host() const;
  // The state directory's health (GET /v1/host's "state_dir"): whether the database takes writes,
  // and while it does not (a full disk) since when, why, and how many jobs wait to be written.
  nlohmann::json state_dir_status() const;
  nlohmann::json timeline_since(JobId id, TimelineCursor& cursor, std::size_t limit) const;

 private:
  const std::string& cached_text(const ManagedJob& job, bool detail) const;

  const JobBook& book_;
  JobDb& db_;
  const Scheduler& scheduler_;
  const HostInventory& inventory_;
  std::filesystem::path state_dir_;
  ExecutorOf executor_of_;
};

}  // namespace ddp::jobs
