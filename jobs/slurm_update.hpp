#pragma once
// What a Slurm job's record (`scontrol -o show job`) means for the daemon's run of it (pure):
// PENDING and the other waiting states → Queued with Slurm's reason, RUNNING/COMPLETING → Running
// on its nodes, a final state → Ended with the exit status (ExitCode 3:0 → 3, a signal → 128+N).
#include "jobs/executor.hpp"
#include "slurm/slurm_job.hpp"

namespace ddp::jobs {

RunUpdate run_update_of(const slurm::SlurmJobInfo& job);

}  // namespace ddp::jobs
