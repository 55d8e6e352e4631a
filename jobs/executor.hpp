#pragma once
// Executor: where the runs of a job execute. The JobManager decides (states, retries, the queue);
// an executor starts one run, tells what becomes of it, stops it, says where its logs are, and
// finds it again after a daemon restart from the RunHandle the job database kept.
//   LocalExecutor (local_executor.hpp): a `ddp-launch run` supervisor on this host.
//   SlurmExecutor (slurm_executor.hpp): an sbatch job running one supervisor per node.
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include "common/exit_status.hpp"
#include "jobs/job_spec.hpp"
#include "jobs/scheduler.hpp"
#include "platform/pid.hpp"

namespace ddp::jobs {

// What the job database keeps of a run to find it again.
struct RunHandle {
  pid_t pid = 0;                     // local: the supervisor
  std::uint64_t pid_start_time = 0;  // local: /proc start time, tells a reused pid apart
  std::string external_id;           // slurm: the Slurm job id
};

struct RunRequest {
  JobId id = 0;
  const JobSpec* spec = nullptr;
  std::filesystem::path run_dir;  // this run's directory (created, empty)
  LaunchContext ctx;
};

// What a run became. Queued and Running may repeat (a new reason); Ended comes once.
struct RunUpdate {
  enum class Phase { Queued, Running, Ended };
  Phase phase = Phase::Running;
  std::string reason;                         // "Slurm job 12 PENDING (Resources)"
  std::optional<ExitStatus> supervisor_exit;  // Ended, local: how the supervisor ended, when it was our child
  std::optional<int> exit_code;               // Ended, when the executor knows the run's exit status itself
  bool succeeded = false;                     // Ended, with exit_code
};

using RunStarted = std::function<void(const RunHandle&)>;
using RunStartFailed = std::function<void(const std::string& why)>;
using RunUpdated = std::function<void(const RunUpdate&)>;

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* name() const = 0;

  // Whether runs take this host's CPU slots and GPUs (booked by the Scheduler) or a cluster's.
  virtual bool uses_host_resources() const = 0;

  // Starts a run; exactly one of started/failed is called, on the daemon's loop (maybe at once).
  virtual void start(const RunRequest& request, RunStarted started, RunStartFailed failed) = 0;

  // Follows a run until it ends: `updated` on the loop, Ended exactly once. `own_child`: started by
  // this daemon (not re-adopted). May call `updated` before it returns when the run is gone already.
  virtual void follow(JobId id, const RunHandle& run, bool own_child, RunUpdated updated) = 0;

  // After a daemon restart: whether the run the database names can still be followed.
  virtual bool can_readopt(const RunHandle& run) = 0;

  // After a daemon killed between starting a run and recording its handle: the run started in
  // run_dir, found by what it was started with; nullopt when none lives (or the executor cannot tell).
  virtual std::optional<RunHandle> find_unrecorded(const std::filesystem::path& run_dir) const {
    (void)run_dir;
    return std::nullopt;
  }

  // Asks the run to stop (SIGTERM to the supervisor, scancel); `force` when it outlived its grace.
  virtual void stop(JobId id, const RunHandle& run, bool force) = 0;

  // Stops following the run (it ended); no more updates.
  virtual void forget(JobId id) = 0;

  // The file holding `rank`'s `stream` ("supervisor" for the supervisor's own output) in the run
  // at run_dir; nullopt while there is none.
  virtual std::optional<std::filesystem::path> log_path(const std::filesystem::path& run_dir, const RunHandle& run,
                                                        const std::string& rank, const std::string& stream) const = 0;
};

}  // namespace ddp::jobs
