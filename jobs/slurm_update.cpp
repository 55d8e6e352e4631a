#include "jobs/slurm_update.hpp"

#include <fmt/format.h>

namespace ddp::jobs {


RunUpdate run_update_of(const slurm::SlurmJobInfo& job) {
  RunUpdate u;
  const auto phase = slurm::phase_of(job.state);
  const bool said = !job.reason.empty() && job.reason != "None";
  if (slurm::is_final(phase)) {
    u.phase = RunUpdate::Phase::Ended;
    u.exit_code = slurm::exit_status_of(job);
    u.succeeded = phase == slurm::JobPhase::Succeeded;
    u.reason = fmt::format("Slurm job {} {}{} (ExitCode={}{})", job.job_id, job.state, said ? ", " + job.reason : "",
                           job.exit_code, job.node_list.empty() ? "" : ", on " + job.node_list);
  } else if (phase == slurm::JobPhase::Running) {
    u.phase = RunUpdate::Phase::Running;
    u.reason =
        fmt::format("Slurm job {} {}{}", job.job_id, job.state, job.node_list.empty() ? "" : " on " + job.node_list);
  } else {
    u.phase = RunUpdate::Phase::Queued;
    u.reason = fmt::format("Slurm job {} {}{}", job.job_id, job.state, said ? " (" + job.reason + ")" : "");
  }
  return u;
}

}  // namespace ddp::jobs
