// JobManager::recover: a restarted daemon takes its jobs back from jobs.db and their run
// directories: live runs are re-adopted, runs that ended meanwhile are settled from their event
// file, what was waiting is queued again.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>

#include "jobs/job_manager.hpp"

namespace ddp::jobs {

namespace fs = std::filesystem;

void JobManager::recover() {
  load_jobs();
  std::size_t adopted = 0, settled = 0, requeued = 0;
  std::vector<JobId> resubmit;  // executor: slurm jobs to submit again (no local queue)
  for (auto& [id, jp] : book_.jobs) {
    switch (recover_job(*jp, resubmit)) {
      case Recovered::Adopted: ++adopted; break;
      case Recovered::Settled: ++settled; break;
      case Recovered::Requeued: ++requeued; break;
      case Recovered::Nothing: break;
    }
  }
  for (auto id : resubmit) {
    auto& job = find(id);
    if (job.rec.state == JobState::Pending || job.rec.state == JobState::Restarting) enqueue(job);
  }
  spdlog::info("recovered {} job(s): {} run(s) re-adopted, {} settled from their run directory, {} queued",
               book_.jobs.size(), adopted, settled, requeued);
  schedule();
}

void JobManager::load_jobs() {
  for (auto& rec : db_.load_jobs()) {
    auto job = std::make_unique<ManagedJob>();
    job->rec = std::move(rec);
    try {
      job->spec = parse_job_spec(job->rec.spec_yaml, fmt::format("job {}", job->rec.id));
    } catch (const std::exception& e) {
      job->spec_ok = false;
      spdlog::error("job {}: its stored spec no longer parses: {}", job->rec.id, e.what());
    }
    ++book_.submitted_total;
    book_.restarts_total += static_cast<std::uint64_t>(job->rec.restarts);
    book_.jobs[job->rec.id] = std::move(job);
  }
}

JobManager::Recovered JobManager::recover_job(Job& job, std::vector<JobId>& resubmit) {
  if (is_terminal(job.rec.state)) return Recovered::Nothing;
  if (!job.spec_ok) {
    job.rec.pid = 0;
    set_state(job, job.rec.state == JobState::Pending ? JobState::Cancelled : JobState::Failed,
              "its stored spec no longer parses with this ddp-launch");
    return Recovered::Nothing;
  }
  for (const auto& event : RunEventReader::replay(job.rec)) absorb_event(job.run, event);  // its memory, no effects
  if (job.rec.state == JobState::Cancelling) {
    job.cancel_requested = true;
    job.cancel_reason = job.rec.reason;
    // Rows from before schema 4 carry no final state: their timeouts' reasons began "timed out".
    job.cancel_final = job.rec.cancel_final.value_or(job.rec.reason.rfind("timed out", 0) == 0 ? JobState::Failed
                                                                                               : JobState::Cancelled);
  }
  const bool ended_unrecorded = find_unrecorded_supervisor(job);
  if (!job.run_live() && !ended_unrecorded) return requeue_recovered(job, resubmit);
  return readopt_or_settle(job);
}

// Killed between starting the supervisor and recording its pid: the supervisor's command line
// names this run's event file (its processes.json may not be written yet). Records the pid when
// it lives; true when it ran and ended (it wrote events: its outcome is in them, and running the
// job again would wipe them).
bool JobManager::find_unrecorded_supervisor(Job& job) {
  const bool local = executor_of(job).uses_host_resources();
  if (!local || job.rec.pid != 0 || job.rec.state != JobState::Starting || job.rec.run_dir.empty()) return false;
  auto events = RunEventReader::events_file(job.rec.run_dir);
  if (auto found = executor_of(job).find_unrecorded(job.rec.run_dir)) {
    spdlog::info("job {}: found its supervisor (pid {}), started before the daemon stopped, by --events {}", job.rec.id,
                 found->pid, events.string());
    job.rec.pid = found->pid;
    job.rec.pid_start_time = found->pid_start_time;
    persist(job);
    return false;
  }
  std::error_code ec;
  return fs::file_size(events, ec) > 0 && !ec;
}

// No run of the job lives: it waits (again) for its turn, its back-off, or ends its cancel.
JobManager::Recovered JobManager::requeue_recovered(Job& job, std::vector<JobId>& resubmit) {
  const auto id = job.rec.id;
  const bool local = executor_of(job).uses_host_resources();
  if (job.rec.state == JobState::Starting) {
    set_state(job, JobState::Pending,
              local ? "requeued: the daemon restarted before the supervisor started"
                    : fmt::format("requeued: the daemon restarted before sbatch answered (a Slurm job it may have "
                                  "submitted is named ddp-{}-{})",
                                  id, job.spec.name));
  }
  if (job.rec.state == JobState::Cancelling) {
    set_state(job, job.cancel_final, job.cancel_reason);  // a timeout stays FAILED
    return Recovered::Nothing;
  }
  if (job.rec.state == JobState::Restarting && job.rec.retry_at > now()) {
    // A daemon retry still in its back-off: it waits out the rest, not a fresh one, nor none.
    spdlog::info("job {}: retrying in {:.1f} s (its back-off, from before the restart)", id, job.rec.retry_at - now());
    arm_retry(job, job.rec.retry_at - now());
    return Recovered::Requeued;
  }
  if (local) {
    scheduler_.enqueue(id, job.rec.priority, static_cast<std::uint64_t>(id),
                       {job.spec.resources.nproc_per_node, job.spec.resources.gpus_per_node});
  } else {
    resubmit.push_back(id);
  }
  return Recovered::Requeued;
}

// A run was started: follow it if it lives (and its resources are still free), else take its
// outcome from its event file.
JobManager::Recovered JobManager::readopt_or_settle(Job& job) {
  const auto id = job.rec.id;
  auto& executor = executor_of(job);
  const bool local = executor.uses_host_resources();
  bool alive = executor.can_readopt(run_handle(job.rec));
  if (alive && (!local || scheduler_.hold({id, job.rec.slots, job.rec.gpus}))) {
    if (local) {
      spdlog::info("job {}: re-adopted its supervisor (pid {}) in {}", id, job.rec.pid, job.rec.run_dir);
    } else {
      spdlog::info("job {}: re-adopted {} job {} in {}", id, executor.name(), job.rec.external_id, job.rec.run_dir);
    }
    watch_run(job, false);
    if (job.cancel_requested) {
      executor.stop(id, run_handle(job.rec), false);
    } else if (job.spec.timeout_s) {
      arm_timeout(job, job.rec.started_at + *job.spec.timeout_s - now());
    }
    return Recovered::Adopted;
  }
  if (alive) spdlog::error("job {}: its supervisor lives but its resources are taken; settling it", id);
  spdlog::info("job {}: its supervisor ({}) ended while the daemon was down; reading {}", id,
               job.rec.pid != 0 ? fmt::format("pid {}", job.rec.pid) : "pid never recorded", job.rec.run_dir);
  read_events(job);
  settle(job, std::nullopt);
  return Recovered::Settled;
}

}  // namespace ddp::jobs
