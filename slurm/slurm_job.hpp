#pragma once
// A Slurm batch job seen from outside: `scontrol -o show job ID` → SlurmJobInfo → phase and exit
// status (pure), and the sbatch / scontrol / scancel calls that submit, follow and cancel it
// (shell, slurm_job_control.cpp). Used by `ddp-launch sbatch --submit [--wait]`; meant for the
// daemon's Slurm executor too.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::slurm {

struct SlurmJobInfo {
  std::string job_id;
  std::string name;
  std::string state;      // PENDING RUNNING COMPLETING COMPLETED FAILED CANCELLED TIMEOUT NODE_FAIL ...
  std::string reason;     // why pending or why it ended (None, Resources, NonZeroExitCode, ...)
  std::string exit_code;  // "3:0" = exit 3, "0:15" = killed by signal 15
  std::string node_list;  // n[1-2]; empty while pending
  std::string std_out;    // absolute path of the batch script's output
  std::string std_err;
};

// One line of `scontrol -o show job`. Values may hold spaces (JobName=my job): a word without '='
// continues the previous value. Throws Error when the line has no JobId.
SlurmJobInfo parse_scontrol_job(std::string_view line);

// TorchX's mapping of Slurm states onto ours.
enum class JobPhase { Pending, Running, Succeeded, Failed, Cancelled };
JobPhase phase_of(std::string_view state);
bool is_final(JobPhase phase);
const char* phase_name(JobPhase phase);

// The job's exit status as a shell would report it: the exit code, or 128+signal.
int exit_status_of(const SlurmJobInfo& job);

// ---- shell: the Slurm client commands, each with a deadline; errors name the command ----

// `sbatch --parsable SCRIPT` → the job id.
std::string submit_batch_script(const std::string& script_path, std::chrono::milliseconds timeout);

// `scontrol -o show job ID`; nullopt when Slurm no longer knows the job (purged after MinJobAge).
std::optional<SlurmJobInfo> query_job(const std::string& job_id, std::chrono::milliseconds timeout);

// `scancel ID` (SIGTERM to every step, SIGKILL after the cluster's KillWait).
void cancel_job(const std::string& job_id, std::chrono::milliseconds timeout);

}  // namespace ddp::slurm
