#pragma once
// The run record: <run_dir>/processes.json (or the run id's file, --rdzv-id without --log-dir)
// names this supervisor, its guardian and the current attempt's workers, each with its /proc start
// time. Rewritten (atomically) after every spawn, removed at a clean exit; one that outlives its
// supervisor tells the next one on the same directory (or run id) what to sweep.
//
// A predecessor that was SIGKILLed together with its guardian leaves its workers' process groups
// behind (PDEATHSIG kills the workers, not their children). The sweep kills what is provably its:
// a live group leader only when pid AND start time match; in a group whose leader is gone (the
// pgid cannot have been reused while the group exists), the members that started after the
// recorded leader; then its cgroups (what left those groups: a `setsid` daemon).
#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "platform/proc.hpp"

namespace ddp::launcher {

struct RecordedProcess {
  pid_t pid = 0;
  pid_t pgid = 0;
  std::uint64_t start_time = 0;
  int rank = -1;        // workers only
  int local_rank = -1;  // workers only
};

struct RunRecordContent {
  RecordedProcess supervisor;
  RecordedProcess guardian;
  int attempt = 0;
  std::vector<std::filesystem::path> cgroups;
  // The FileStore files its workers use (--store file's, and the file:// paths their command lines
  // and environments name): `clean` asks records whose supervisor is gone who may hold one.
  std::vector<std::string> filestores;
  std::vector<RecordedProcess> workers;
};

// --- pure (unit-tested) ---

// The file's JSON (keys: supervisor, guardian, attempt, cgroups, workers).
std::string run_record_text(const RunRecordContent& record);
// Missing fields read as 0 / empty, as a record from an older version may lack some. Throws
// std::exception on text that is not such JSON.
RunRecordContent parse_run_record(std::string_view text);

// Where this run's record goes and where predecessors' may be.
struct RunRecordPaths {
  std::filesystem::path run_dir;
  std::filesystem::path processes_file;  // --rdzv-id without --log-dir; empty: <run_dir>/processes.json
  std::filesystem::path log_base_dir;    // --log-dir; empty: none
  std::filesystem::path record() const;
};

// The run id's record (--rdzv-id without --log-dir): <temp_dir>/ddp-launch-<id>-node<N>.processes.json,
// `id` already safe in a file name. `clean` finds these by their prefix and suffix.
std::filesystem::path run_id_record(const std::filesystem::path& temp_dir, std::string_view id, int node_rank);
inline constexpr std::string_view kRunDirPrefix = "ddp-launch-";  // temporary run dirs and run id records
inline constexpr std::string_view kRunIdRecordSuffix = ".processes.json";

// The records a predecessor may have left: the run id's file (--rdzv-id without --log-dir); with
// --log-dir, every earlier run's <run_id>_<random>/processes.json there (and <log_dir>/
// processes.json, where versions before torchrun's layout kept it); else our own run_dir's.
std::vector<std::filesystem::path> predecessor_records(const RunRecordPaths& paths);

using ProcStatLookup = std::function<std::optional<proc::ProcStat>(pid_t)>;

// Whether the record's supervisor is alive (another one than `self`), and what that means here.
enum class RecordOwner {
  Gone,         // dead (or ourselves): sweep what it left
  SiblingRun,   // a live run sharing --log-dir: its own directory, not ours to touch
  SharedRunId,  // a live run with the same --rdzv-id: this run records nothing (no conflict)
  Conflict,     // a live run on the same run directory: an error
};
RecordOwner record_owner(const RunRecordContent& record, pid_t self, const RunRecordPaths& paths,
                         const ProcStatLookup& lookup);

// What to kill of one recorded worker: its whole group when its leader is provably it (pid, start
// time, group and user match), else the members of its (leaderless) group that started after it
// and run as this user. Workers lead their own groups; a record that says otherwise (or pid ≤ 1, no
// start time) is skipped; a live pid that is not the recorded worker goes to `spared` (reported).
struct SweepStep {
  pid_t pgid = 0;
  std::uint64_t start_time = 0;
  bool leader_alive = false;  // true: kill(-pgid); false: members_to_sweep over /proc
};
std::vector<SweepStep> plan_sweep(const RunRecordContent& record, const ProcStatLookup& lookup,
                                  std::vector<pid_t>* spared = nullptr);
// Windows' sweep (no process groups there): the recorded workers that still run with their recorded
// start time as this user. A live pid with another start time (reused) or another user's goes to
// `spared` (reported, never signalled); a record entry without pid or start time is skipped.
std::vector<RecordedProcess> workers_to_end(const RunRecordContent& record, const ProcStatLookup& lookup,
                                            std::vector<pid_t>* spared = nullptr);
// The processes (pid, stat) in group `step.pgid` that started at or after the recorded leader and
// run as this user.
std::vector<pid_t> members_to_sweep(const SweepStep& step,
                                    const std::vector<std::pair<pid_t, proc::ProcStat>>& processes);

// --- the shell ---

// What a sweep killed, for the `swept_predecessor` event.
struct SweptPredecessor {
  pid_t supervisor_pid = 0;
  std::vector<pid_t> killed;
};

class RunRecord {
 public:
  explicit RunRecord(RunRecordPaths paths) : paths_(std::move(paths)) {}

  std::filesystem::path path() const { return paths_.record(); }
  // Sweeps every predecessor record (predecessor_records); calls `swept` for each that killed
  // processes. Throws Error when a live supervisor owns this run's directory.
  void sweep_predecessors(const std::function<void(const SweptPredecessor&)>& swept);
  // Writes the record (atomically); a warning, not an error, when it cannot.
  void write(const RunRecordContent& content) const;
  // The record of a clean exit or of a start that failed before any worker.
  void remove() const;
  // Another live supervisor with this run id records its processes in path(): this one does not.
  bool disabled() const { return disabled_; }

 private:
  std::optional<SweptPredecessor> sweep(const std::filesystem::path& record);

  RunRecordPaths paths_;
  bool disabled_ = false;
};

// The record entry of a live process (its pgid and start time from /proc; 0 when unreadable).
RecordedProcess recorded_process(pid_t pid);

// --- pure ---
// Whether a record's supervisor is gone (`lookup` finds no process with its pid and start time), and
// its workers that still run (pid, start time and user match), when the record names `filestore` among its
// FileStores (compared as given and as `same_file` decides).
std::vector<RecordedProcess> dead_run_workers_of(const RunRecordContent& record, const ProcStatLookup& lookup,
                                                 const std::function<bool(const std::string&)>& names_filestore);

// --- the shell ---
// The live workers of dead runs whose records (processes.json in `dirs` and their ddp-launch-*
// subdirectories, and the run id records there: the temporary directory, a --log-dir) name the
// FileStore `file`. Only this user's records count (platform::read_own_file); others are reported.
std::vector<proc::ProcessInfo> dead_run_workers(const std::filesystem::path& file,
                                                const std::vector<std::filesystem::path>& dirs);

// Kills what a dead supervisor's record names and is provably its, returns the pids killed. Linux:
// plan_sweep's groups and members, then its cgroups. Windows: each recorded worker still alive with
// its recorded start time as this user (workers_to_end; its Job Object died with the supervisor, so
// this finds one only when the record outlived a supervisor ended some other way), the others reported.
std::vector<pid_t> kill_recorded(const RunRecordContent& record);

}  // namespace ddp::launcher
