#pragma once
// JobManager: the jobs' lifecycle on the daemon's one Asio loop. It ties the pure cores (JobSpec,
// Scheduler, JobState, run_outcome) to the shells it is given (JobShells): the job database (every
// change is committed before it is acted on), the executors (local: one `ddp-launch run` supervisor
// per run of a job, in its own session; slurm: one sbatch job per run), the file watch that the
// run-event reader follows a local supervisor's event file with, and the clock. The daemon gives it
// the real ones (job_daemon.hpp), the unit tests fakes (tests/unit/jobs/test_job_manager.cpp).
// What the API shows of the jobs is JobViews' (job_views.hpp), read-only.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/events.hpp"
#include "jobs/executor.hpp"
#include "jobs/job_clock.hpp"
#include "jobs/job_db.hpp"
#include "jobs/job_errors.hpp"
#include "jobs/job_spec.hpp"
#include "jobs/job_views.hpp"
#include "jobs/managed_job.hpp"
#include "jobs/run_events.hpp"
#include "jobs/scheduler.hpp"
#include "platform/file_watch.hpp"

namespace ddp::jobs {

struct DaemonConfig {
  std::filesystem::path state_dir;  // jobs.db, jobs/<id>/run-<n>/…, token
  std::string self_exe;             // the ddp-launch binary supervisors are started from
  HostInventory inventory;
  std::chrono::milliseconds slurm_poll_interval{2000};  // executor: slurm: scontrol per job this often
};

// What the lifecycle acts through, owned by its caller and outliving it.
struct JobShells {
  JobDb& db;
  Executor& local;  // executor: local (the default)
  Executor& slurm;  // executor: slurm
  platform::FileWatch& files;
  const Clock& clock;
};

class JobManager {
 public:
  JobManager(boost::asio::io_context& io, DaemonConfig config, JobShells shells);
  ~JobManager();

  // Loads the database; re-adopts live supervisors, settles the ones that ended meanwhile,
  // requeues what was waiting; then starts what fits.
  void recover();

  // Operations of the API (throw JobError, or JobSpecError for a job file with problems).
  nlohmann::json submit(const std::string& yaml, const std::string& file_name);
  // What submit would refuse (JobSpecError, JobError DoesNotFit), without submitting; else the
  // spec's name and size.
  nlohmann::json validate(const std::string& yaml, const std::string& file_name) const;
  nlohmann::json cancel(JobId id);

  // What the API shows (read-only).
  const JobViews& views() const { return views_; }

  // Called after any change of job `id` (log followers re-check their file).
  int subscribe(JobId id, std::function<void()> cb);
  void unsubscribe(int token);
  // Called with the job's id after any change of any job (its state, its events, a submit): the
  // dashboard's live views. Called at once, inside the change: the callback only takes note (it
  // must not call into the manager). With no watcher, a change costs nothing more.
  int watch_changes(std::function<void(JobId)> cb);
  void unwatch_changes(int token);

  const DaemonConfig& config() const { return config_; }
  // The file watch the daemon shares (log followers, the dashboard's metrics files).
  platform::FileWatch& file_watch() { return shells_.files; }

 private:
  using Job = ManagedJob;
  JobSpec checked_spec(const std::string& yaml, const std::string& file_name) const;
  void set_state(Job& job, JobState to, const std::string& reason);
  void persist(Job& job);
  // job_persistence.cpp: every write of a job's record goes through save(); a failed write (a full
  // state directory) is kept in memory and retried with a bounded back-off, never thrown into the
  // job's life (a run that ends is still settled and its slots freed).
  void save(Job& job, std::optional<TransitionRow> transition = std::nullopt);
  void note_events(Job& job, std::int64_t from, std::int64_t to);
  std::optional<std::string> write_unsaved(Job& job);  // the error when the database refused it
  void flush_unsaved();
  void on_write_failed(const std::string& why);
  void schedule();
  void launch(Job& job, const Placement& placement);
  void on_run_started(JobId id, int run, const RunHandle& handle);
  void on_run_start_failed(JobId id, int run, const std::string& why);
  void watch_run(Job& job, bool own_child);
  void on_run_update(Job& job, const RunUpdate& update);
  void arm_timeout(Job& job, double seconds_left);
  Executor& executor_of(const Job& job) const;
  void read_events(Job& job);
  void apply_event(Job& job, const events::Event& event);
  // Recovery (job_recovery.cpp)
  enum class Recovered { Nothing, Adopted, Settled, Requeued };
  void load_jobs();
  Recovered recover_job(Job& job, std::vector<JobId>& resubmit);
  bool find_unrecorded_supervisor(Job& job);
  Recovered requeue_recovered(Job& job, std::vector<JobId>& resubmit);
  Recovered readopt_or_settle(Job& job);
  void on_supervisor_exit(Job& job, std::optional<ExitStatus> supervisor_exit);
  void settle(Job& job, std::optional<ExitStatus> supervisor_exit);
  void arm_retry(Job& job, double delay_s);
  void stop_supervisor(Job& job, const std::string& reason, JobState final_state);
  std::optional<std::string> no_retry_match(const Job& job) const;
  void notify(JobId id);
  void enqueue(Job& job);
  Job& find(JobId id) { return book_.find(id); }
  double now() const { return shells_.clock.now(); }

  boost::asio::io_context& io_;
  DaemonConfig config_;
  JobShells shells_;
  JobDb& db_;
  Scheduler scheduler_;
  RunEventReader events_;
  JobBook book_;
  JobViews views_;
  // Fault injection (fault_injection.hpp; test builds only): SIGKILL itself once a run has started,
  // before its pid or Slurm id is committed, so the recovery of that window can be tested for real.
  bool kill_after_spawn_ = false;
  std::multimap<JobId, std::pair<int, std::function<void()>>> subscribers_;
  std::map<int, std::function<void(JobId)>> change_watchers_;
  int next_subscriber_ = 1;
  std::unique_ptr<boost::asio::steady_timer> flush_timer_;  // job_persistence.cpp's retry
};

}  // namespace ddp::jobs
