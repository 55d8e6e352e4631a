// The shell half of slurm/slurm_job.hpp: sbatch, scontrol and scancel with deadlines.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "common/error.hpp"
#include "common/exit_status.hpp"
#include "platform/subprocess.hpp"
#include "slurm/sbatch_script.hpp"
#include "slurm/slurm_job.hpp"

namespace ddp::slurm {
namespace {

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

CommandRun run_slurm_client(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  auto r = run_command(argv, timeout, true);
  if (!r.started) {
    throw Error(
        fmt::format("{} could not be started ({}): is the Slurm client installed here?", argv[0], r.start_error));
  }
  if (r.timed_out) {
    throw Error(fmt::format("`{}` gave no answer within {:.0f}s: is slurmctld up (`scontrol ping`)?",
                            fmt::join(argv, " "), std::chrono::duration<double>(timeout).count()));
  }
  return r;
}

}  // namespace

std::string submit_batch_script(const std::string& script_path, std::chrono::milliseconds timeout) {
  auto r = run_slurm_client({"sbatch", "--parsable", script_path}, timeout);
  if (r.exit_code != 0) {
    throw Error(fmt::format("sbatch {}: {}", describe_exit(ExitStatus::of(r.exit_code, r.signal)),
                            trimmed(r.errors.empty() ? r.output : r.errors)));
  }
  return job_id_from_parsable(r.output);
}

std::optional<SlurmJobInfo> query_job(const std::string& job_id, std::chrono::milliseconds timeout) {
  auto r = run_slurm_client({"scontrol", "-o", "show", "job", job_id}, timeout);
  if (r.exit_code != 0) {
    if (r.errors.find("Invalid job id") != std::string::npos) return std::nullopt;
    throw Error(fmt::format("scontrol show job {} {}: {}", job_id, describe_exit(ExitStatus::of(r.exit_code, r.signal)),
                            trimmed(r.errors)));
  }
  return parse_scontrol_job(r.output);
}

void cancel_job(const std::string& job_id, std::chrono::milliseconds timeout) {
  auto r = run_slurm_client({"scancel", job_id}, timeout);
  if (r.exit_code != 0) {
    throw Error(fmt::format("scancel {} {}: {}", job_id, describe_exit(ExitStatus::of(r.exit_code, r.signal)),
                            trimmed(r.errors)));
  }
}

}  // namespace ddp::slurm
