#pragma once
// JobDb: the daemon's durable state in SQLite (WAL): jobs, their state transitions and the
// events of their supervisors. Every state change is written (in one transaction with its
// transition row) before the daemon acts on it, so a `kill -9` loses no job.
// Schema versioned with PRAGMA user_version; a newer database than this binary is refused.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jobs/job_state.hpp"
#include "jobs/scheduler.hpp"
#include "platform/pid.hpp"

struct sqlite3;

namespace ddp::jobs {

inline constexpr int kJobDbSchemaVersion = 4;  // 2: jobs.retry_at; 3: jobs.external_id; 4: jobs.cancel_final

struct JobRecord {
  JobId id = 0;
  std::string name;
  std::string spec_yaml;
  int priority = 0;
  JobState state = JobState::Pending;
  std::string reason;
  int runs = 0;      // supervisors launched (daemon-level attempts)
  int restarts = 0;  // restarts of any kind: worker-group restarts plus daemon retries
  double submitted_at = 0;
  double started_at = 0;   // first launch; 0 before
  double finished_at = 0;  // terminal; 0 before
  std::optional<int> exit_code;
  pid_t pid = 0;                     // the current supervisor; 0 when none
  std::uint64_t pid_start_time = 0;  // /proc/<pid>/stat field 22: tells a reused pid apart
  std::string run_dir;               // the current run's directory (events, logs, supervisor.log)
  std::vector<int> gpus;
  int slots = 0;
  std::int64_t events_offset = 0;  // bytes of the current run's event file already applied
  double retry_at = 0;             // RESTARTING between runs: when the daemon retries (wall clock); 0: none
  std::string external_id;         // the current run's id in another system (the Slurm job id); "" when none
  // CANCELLING: the state the stop ends in (CANCELLED for a cancel, FAILED for limits.timeout).
  // nullopt otherwise, and in rows a daemon before schema 4 wrote (then read from the reason).
  std::optional<JobState> cancel_final;
};

struct TransitionRow {
  double time = 0;
  std::string from, to, reason;
  int run = 0;
  std::int64_t seq = 0;  // its row id when read back: rows after a seq are the newer ones
};

struct EventRow {
  double time = 0;
  int run = 0;
  std::string type;
  std::string data_json;
  std::int64_t seq = 0;  // its row id when read back: rows after a seq are the newer ones
};

class JobDb {
 public:
  explicit JobDb(const std::filesystem::path& path);
  ~JobDb();
  JobDb(const JobDb&) = delete;
  JobDb& operator=(const JobDb&) = delete;

  int schema_version();
  // Runs f inside BEGIN IMMEDIATE … COMMIT (ROLLBACK if it throws).
  void transaction(const std::function<void()>& f);

  JobId insert_job(const JobRecord& r);  // returns the new id
  void update_job(const JobRecord& r);
  void add_transition(JobId id, const TransitionRow& t);
  void add_event(JobId id, const EventRow& e);

  std::vector<JobRecord> load_jobs();
  std::vector<TransitionRow> transitions(JobId id);
  std::vector<EventRow> events(JobId id, std::optional<std::string> type = std::nullopt) const;
  // The rows written after row `after_seq` (0: from the first), oldest first, at most `limit`: what a
  // live view has not shown yet, read through the job_id index without rereading the older rows.
  std::vector<TransitionRow> transitions_after(JobId id, std::int64_t after_seq, std::size_t limit) const;
  std::vector<EventRow> events_after(JobId id, std::int64_t after_seq, std::size_t limit) const;

 private:
  void exec(const char* sql);
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

}  // namespace ddp::jobs
