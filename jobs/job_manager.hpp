#pragma once
// JobManager: the daemon's jobs on its one Asio loop. It ties the pure cores (JobSpec,
// Scheduler, JobState) to the shells: JobDb (every change is committed before it is acted on),
// the executors (local: one `ddp-launch run` supervisor per run of a job, in its own session;
// slurm: one sbatch job per run) and inotify (a local supervisor's event file).
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
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
#include "common/inotify.hpp"
#include "jobs/daemon_metrics.hpp"
#include "jobs/executor.hpp"
#include "jobs/job_db.hpp"
#include "jobs/job_errors.hpp"
#include "jobs/job_spec.hpp"
#include "jobs/scheduler.hpp"

namespace ddp::jobs {

struct DaemonConfig {
  std::filesystem::path state_dir;  // jobs.db, jobs/<id>/run-<n>/…, token
  std::string self_exe;             // the ddp-launch binary supervisors are started from
  HostInventory inventory;
  std::chrono::milliseconds slurm_poll_interval{2000};  // executor: slurm: scontrol per job this often
};

class JobManager {
 public:
  JobManager(boost::asio::io_context& io, DaemonConfig config);
  ~JobManager();

  // Loads the database; re-adopts live supervisors, settles the ones that ended meanwhile,
  // requeues what was waiting; then starts what fits.
  void recover();

  // Operations of the API (throw JobError, or JobSpecError for a job file with problems).
  nlohmann::json submit(const std::string& yaml, const std::string& file_name);
  // What submit would refuse (JobSpecError, JobError DoesNotFit), without submitting; else the
  // spec's name and size.
  nlohmann::json validate(const std::string& yaml, const std::string& file_name) const;
  // list and get answer from per-job JSON texts cached until anything changes (a job, the
  // queue): at a thousand requests a second most of them change nothing.
  std::string list_text(std::optional<JobState> state, std::size_t limit) const;
  std::string get_text(JobId id) const;
  nlohmann::json get(JobId id) const;
  nlohmann::json cancel(JobId id);
  nlohmann::json events(JobId id);
  nlohmann::json job_metrics(JobId id) const;
  JobCounts counts() const;  // GET /metrics (daemon_metrics.hpp renders them)

  // The log file of `rank` ("supervisor" for the supervisor's own output) in the job's latest
  // run and latest attempt; nullopt while it does not exist yet.
  std::optional<std::filesystem::path> log_path(JobId id, const std::string& rank, const std::string& stream) const;
  bool exists(JobId id) const { return jobs_.count(id) > 0; }
  bool is_finished(JobId id) const;

  // Called after any change of job `id` (log followers re-check their file).
  int subscribe(JobId id, std::function<void()> cb);
  void unsubscribe(int token);
  // Called with the job's id after any change of any job (its state, its events, a submit): the
  // dashboard's live views. Called at once, inside the change: the callback only takes note (it
  // must not call into the manager). With no watcher, a change costs nothing more.
  int watch_changes(std::function<void(JobId)> cb);
  void unwatch_changes(int token);

  // The dashboard's views (job_views.cpp): the host's slots and GPUs (and their jobs), the queue in
  // order and the jobs by state; a job's transitions and events newer than a cursor (at most
  // `limit` rows of each), which advances past what it returns.
  struct TimelineCursor {
    std::int64_t transitions = 0, events = 0;
  };
  nlohmann::json host() const;
  // The state directory's health (GET /v1/host's "state_dir"): whether the database takes writes,
  // and while it does not (a full disk) since when, why, and how many jobs wait to be written.
  nlohmann::json state_dir_status() const;
  nlohmann::json timeline_since(JobId id, TimelineCursor& cursor, std::size_t limit) const;
  const DaemonConfig& config() const { return config_; }
  std::string run_dir(JobId id) const;  // the latest run's directory; "" before the first
  ddp::Inotify& inotify() { return inotify_; }

 private:
  struct Job;
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
  static RunHandle run_of(const Job& job);
  static bool run_live(const Job& job);
  void read_events(Job& job);
  void apply_event(Job& job, const events::Event& event);
  void replay_events(Job& job);
  // Recovery (job_recovery.cpp)
  enum class Recovered { Nothing, Adopted, Settled, Requeued };
  void load_jobs();
  Recovered recover_job(Job& job, std::vector<JobId>& resubmit);
  bool find_unrecorded_supervisor(Job& job);
  Recovered requeue_recovered(Job& job, std::vector<JobId>& resubmit);
  Recovered readopt_or_settle(Job& job);
  void on_supervisor_exit(Job& job, std::optional<int> wait_status);
  void settle(Job& job, std::optional<int> wait_status);
  void arm_retry(Job& job, double delay_s);
  void stop_supervisor(Job& job, const std::string& reason, JobState final_state);
  std::optional<std::string> no_retry_match(const Job& job) const;
  nlohmann::json to_json(const Job& job, bool detail) const;
  const std::string& cached_text(const Job& job, bool detail) const;
  void notify(JobId id);
  void enqueue(Job& job);
  Job& find(JobId id);
  const Job& find(JobId id) const;

  boost::asio::io_context& io_;
  DaemonConfig config_;
  JobDb db_;
  Scheduler scheduler_;
  ddp::Inotify inotify_;
  std::unique_ptr<Executor> local_, slurm_;
  // Fault injection (fault_injection.hpp; test builds only): SIGKILL itself once a run has started,
  // before its pid or Slurm id is committed, so the recovery of that window can be tested for real.
  bool kill_after_spawn_ = false;
  std::map<JobId, std::unique_ptr<Job>> jobs_;
  std::multimap<JobId, std::pair<int, std::function<void()>>> subscribers_;
  std::map<int, std::function<void(JobId)>> change_watchers_;
  int next_subscriber_ = 1;
  std::uint64_t submitted_total_ = 0;
  std::uint64_t restarts_total_ = 0;
  std::uint64_t generation_ = 1;  // bumped by every change of a job or of the queue
  // Writes that failed (job_persistence.cpp): the jobs to write again, and the episode's facts.
  std::set<JobId> unsaved_;
  struct WriteTrouble {
    std::string error;
    double since = 0;
    std::uint64_t failures = 0;
    std::chrono::milliseconds backoff{0};
  };
  std::optional<WriteTrouble> write_trouble_;
  std::unique_ptr<boost::asio::steady_timer> flush_timer_;
};

}  // namespace ddp::jobs
