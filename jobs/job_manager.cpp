#include "jobs/job_manager.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <fstream>

#include "common/error.hpp"
#include "common/fault_injection.hpp"
#include "common/user_regex.hpp"
#include "jobs/run_logs.hpp"
#include "jobs/run_outcome.hpp"
#include "platform/detached_process.hpp"
#include "platform/host.hpp"
#include "platform/signal_numbers.hpp"

namespace ddp::jobs {

namespace fs = std::filesystem;
namespace asio = boost::asio;
using json = nlohmann::json;

JobManager::JobManager(asio::io_context& io, DaemonConfig config, JobShells shells)
    : io_(io),
      config_(std::move(config)),
      shells_(shells),
      db_(shells.db),
      scheduler_(config_.inventory),
      events_(shells.files),
      views_(book_, shells.db, scheduler_, config_.inventory, config_.state_dir,
             [this](const ManagedJob& job) -> const Executor& { return executor_of(job); }),
      kill_after_spawn_(fault_armed(kFaultKillAfterSpawn)) {
  if (kFaultInjectionBuilt && kill_after_spawn_) {
    spdlog::warn("fault injection: {} armed: this daemon kills itself after its first spawn (tests only)",
                 kFaultKillAfterSpawn);
  }
}

JobManager::~JobManager() = default;

Executor& JobManager::executor_of(const Job& job) const {
  return job.spec.executor == "slurm" ? shells_.slurm : shells_.local;
}

void JobManager::persist(Job& job) {
  ++book_.generation;
  save(job);  // job_persistence.cpp: a full state directory is retried, never thrown into the job's life
}

void JobManager::set_state(Job& job, JobState to, const std::string& reason) {
  auto from = job.rec.state;
  if (from == to && job.rec.reason == reason) return;
  if (from != to && !can_transition(from, to)) {
    spdlog::error("job {}: illegal transition {} → {} ignored ({})", job.rec.id, state_name(from), state_name(to),
                  reason);
    return;
  }
  job.rec.state = to;
  job.rec.reason = reason;
  if (is_terminal(to)) job.rec.finished_at = now();
  ++book_.generation;
  std::optional<TransitionRow> transition;
  if (from != to) {
    transition = TransitionRow{now(), std::string(state_name(from)), std::string(state_name(to)), reason,
                               std::max(0, job.rec.runs - 1)};
  }
  save(job, std::move(transition));  // the record and its transition, in one transaction
  if (from != to)
    spdlog::info("job {} ({}): {} → {}: {}", job.rec.id, job.rec.name, state_name(from), state_name(to), reason);
  notify(job.rec.id);
}

int JobManager::subscribe(JobId id, std::function<void()> cb) {
  int token = next_subscriber_++;
  subscribers_.emplace(id, std::make_pair(token, std::move(cb)));
  return token;
}

void JobManager::unsubscribe(int token) {
  for (auto it = subscribers_.begin(); it != subscribers_.end(); ++it) {
    if (it->second.first == token) {
      subscribers_.erase(it);
      return;
    }
  }
}

int JobManager::watch_changes(std::function<void(JobId)> cb) {
  int token = next_subscriber_++;
  change_watchers_.emplace(token, std::move(cb));
  return token;
}

void JobManager::unwatch_changes(int token) { change_watchers_.erase(token); }

void JobManager::notify(JobId id) {
  for (const auto& [token, watcher] : change_watchers_) watcher(id);
  std::vector<std::pair<int, std::function<void()>>> calls;
  auto range = subscribers_.equal_range(id);
  for (auto it = range.first; it != range.second; ++it) calls.push_back(it->second);
  // Defer: a follower may write to its socket or unsubscribe; never inside a state change.
  for (auto& call : calls) {
    asio::post(io_, [this, call] {
      for (const auto& kv : subscribers_) {
        if (kv.second.first == call.first) {
          call.second();
          return;
        }
      }
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Submit, schedule, launch

JobSpec JobManager::checked_spec(const std::string& yaml, const std::string& file_name) const {
  JobSpec spec = parse_job_spec(yaml, file_name);
  if (spec.executor == "local") {
    if (auto why = scheduler_.never_fits({spec.resources.nproc_per_node, spec.resources.gpus_per_node}))
      throw JobError(JobErrorKind::DoesNotFit, *why);
  }
  return spec;
}

json JobManager::validate(const std::string& yaml, const std::string& file_name) const {
  auto spec = checked_spec(yaml, file_name);
  return {{"name", spec.name},
          {"nodes", spec.resources.nodes},
          {"nproc_per_node", spec.resources.nproc_per_node},
          {"gpus_per_node", spec.resources.gpus_per_node}};
}

json JobManager::submit(const std::string& yaml, const std::string& file_name) {
  JobSpec spec = checked_spec(yaml, file_name);
  ResourceRequest req{spec.resources.nproc_per_node, spec.resources.gpus_per_node};
  auto job = std::make_unique<Job>();
  job->spec = spec;
  job->rec.name = spec.name;
  job->rec.spec_yaml = yaml;
  job->rec.priority = spec.priority;
  job->rec.submitted_at = now();
  job->rec.reason = "queued";
  try {
    db_.transaction([&] {
      job->rec.id = db_.insert_job(job->rec);
      db_.add_transition(job->rec.id, {job->rec.submitted_at, "", "PENDING", "submitted", 0});
    });
  } catch (const Error& e) {
    // Nothing of it exists yet: refused, not kept (a job the database never had would vanish at a restart).
    throw JobError(JobErrorKind::Unavailable,
                   fmt::format("cannot record the job: {}; free space in the daemon's state directory {} and "
                               "submit again",
                               e.what(), config_.state_dir.string()));
  }
  auto id = job->rec.id;
  ++book_.submitted_total;
  auto& ref = *job;
  book_.jobs[id] = std::move(job);
  spdlog::info("job {} ({}) submitted: {} node(s) × {} rank(s), {} GPU(s) per node, priority {}, executor {}", id,
               spec.name, spec.resources.nodes, req.slots, req.gpus, spec.priority, spec.executor);
  enqueue(ref);
  notify(id);  // a job that waits in the queue changed nothing else, but it is new
  return views_.to_json(ref, false);
}

void JobManager::enqueue(Job& job) {
  ++book_.generation;
  if (!executor_of(job).uses_host_resources()) {
    // Slurm queues and places it: nothing of this host is booked, no local queue to wait in.
    launch(job, Placement{job.rec.id, 0, {}});
    return;
  }
  scheduler_.enqueue(job.rec.id, job.rec.priority, static_cast<std::uint64_t>(job.rec.id),
                     {job.spec.resources.nproc_per_node, job.spec.resources.gpus_per_node});
  schedule();
}

void JobManager::schedule() {
  ++book_.generation;
  for (const auto& p : scheduler_.schedule()) launch(find(p.id), p);
}

void JobManager::launch(Job& job, const Placement& placement) {
  job.reset_run();
  job.rec.runs += 1;
  job.rec.retry_at = 0;
  auto run_dir = config_.state_dir / "jobs" / std::to_string(job.rec.id) / fmt::format("run-{}", job.rec.runs - 1);
  std::error_code ec;
  fs::remove_all(run_dir, ec);  // a run directory a crash left before the pid was recorded
  fs::create_directories(run_dir / "logs", ec);
  std::ofstream(run_dir / "events.jsonl").flush();  // exists before the watch and the supervisor
  job.rec.run_dir = run_dir.string();
  job.rec.gpus = placement.gpus;
  job.rec.slots = placement.slots;
  job.rec.pid = 0;
  job.rec.pid_start_time = 0;
  job.rec.events_offset = 0;
  job.rec.exit_code.reset();
  if (job.rec.started_at == 0) job.rec.started_at = now();
  job.rec.external_id.clear();
  set_state(job, JobState::Starting,
            executor_of(job).uses_host_resources()
                ? fmt::format("starting the supervisor (run {})", job.rec.runs - 1)
                : fmt::format("submitting to {} with sbatch (run {})", executor_of(job).name(), job.rec.runs - 1));

  LaunchContext ctx{config_.self_exe, std::to_string(job.rec.id), run_dir / "logs", run_dir / "events.jsonl",
                    placement.gpus};
  auto& executor = executor_of(job);
  const auto id = job.rec.id;
  const int run = job.rec.runs;
  job.submitting = true;
  executor.start(
      RunRequest{id, &job.spec, run_dir, ctx},
      [this, id, run](const RunHandle& handle) { on_run_started(id, run, handle); },
      [this, id, run](const std::string& why) { on_run_start_failed(id, run, why); });
}

// The executor started run `run` of job `id` (a supervisor's pid, or a Slurm job id).
void JobManager::on_run_started(JobId id, int run, const RunHandle& handle) {
  // Test builds only: a kill -9 at the worst moment, the supervisor started and its pid not yet committed.
  if constexpr (kFaultInjectionBuilt) {
    if (kill_after_spawn_) platform::signal_process(platform::current_pid(), sig::kKill);
  }
  auto& j = find(id);
  auto& executor = executor_of(j);
  j.submitting = false;
  if (j.rec.runs != run || is_terminal(j.rec.state)) {  // cancelled before it could be stopped
    executor.stop(id, handle, false);
    return;
  }
  j.rec.pid = handle.pid;
  j.rec.pid_start_time = handle.pid_start_time;
  j.rec.external_id = handle.external_id;
  persist(j);
  if (!handle.external_id.empty()) {
    spdlog::info("job {}: submitted as {} job {}", id, executor.name(), handle.external_id);
    set_state(j, JobState::Starting, fmt::format("submitted as Slurm job {} (run {})", handle.external_id, run - 1));
  }
  watch_run(j, true);
  if (j.cancel_requested) {
    executor.stop(id, handle, false);
  } else if (j.spec.timeout_s) {
    arm_timeout(j, *j.spec.timeout_s);
  }
}

void JobManager::on_run_start_failed(JobId id, int run, const std::string& why) {
  auto& j = find(id);
  j.submitting = false;
  if (j.rec.runs != run || is_terminal(j.rec.state)) return;
  scheduler_.release(id);
  ++book_.generation;
  if (j.cancel_requested) {
    set_state(j, j.cancel_final, j.cancel_reason);
  } else {
    set_state(j, JobState::Failed, why);
  }
}

void JobManager::arm_timeout(Job& job, double seconds_left) {
  job.timeout_timer = std::make_unique<asio::steady_timer>(io_);
  job.timeout_timer->expires_after(std::chrono::milliseconds(static_cast<long>(std::max(0.0, seconds_left) * 1000)));
  job.timeout_timer->async_wait([this, id = job.rec.id](boost::system::error_code ec) {
    if (ec) return;
    auto& j = find(id);
    if (!j.run_live() || is_terminal(j.rec.state) || j.cancel_requested) return;
    stop_supervisor(j, fmt::format("timed out after {}s (limits.timeout)", *j.spec.timeout_s), JobState::Failed);
  });
}

void JobManager::watch_run(Job& job, bool own_child) {
  auto id = job.rec.id;
  auto& executor = executor_of(job);
  if (executor.uses_host_resources()) {  // a local supervisor: its event stream
    job.events_watch = events_.watch(job.rec.run_dir, [this, id] { read_events(find(id)); });
    read_events(job);
  }
  const int run = job.rec.runs;
  executor.follow(id, run_handle(job.rec), own_child, [this, id, run](const RunUpdate& u) {
    auto& j = find(id);
    if (j.rec.runs != run) return;
    on_run_update(j, u);
  });
}

void JobManager::on_run_update(Job& job, const RunUpdate& u) {
  using Phase = RunUpdate::Phase;
  if (u.phase == Phase::Ended) {
    if (u.exit_code) {  // the executor knows the outcome itself (no supervisor event stream here)
      absorb_executor_end(job.run, u.succeeded, *u.exit_code, u.reason);
    }
    on_supervisor_exit(job, u.supervisor_exit);
    return;
  }
  if (job.rec.state == JobState::Cancelling || is_terminal(job.rec.state)) return;
  if (u.phase == Phase::Running) {
    set_state(job, JobState::Running, u.reason);
  } else if (job.rec.state == JobState::Starting) {
    set_state(job, JobState::Starting, u.reason);
  }
}

// ---------------------------------------------------------------------------------------------
// The supervisor's event stream

namespace {
// The worker-group attempt an event names (0 for a dynamic round, which names none).
int attempt_of(const events::Payload& event) {
  if (const auto* e = std::get_if<events::RankStarted>(&event)) return e->attempt;
  if (const auto* e = std::get_if<events::Restarting>(&event)) return e->attempt;
  if (const auto* e = std::get_if<events::RendezvousComplete>(&event)) return e->attempt.value_or(0);
  return 0;
}
}  // namespace

void JobManager::read_events(Job& job) {
  auto fresh = events_.read_new(job.rec);  // parsed; the record's offset advanced past them
  if (!fresh) return;
  // The rows are written from the file's bytes (job_persistence.cpp), with the record that says
  // they are in: at once, or once a full state directory has room again.
  note_events(job, fresh->from, fresh->to);
  persist(job);
  for (const auto& event : fresh->events) apply_event(job, event);
  notify(job.rec.id);
}

void JobManager::apply_event(Job& job, const events::Event& ev) {
  absorb_event(job.run, ev);  // the run's memory: the same fold a restarted daemon replays
  if (ev.as<events::Restarting>()) {
    job.rec.restarts += 1;
    ++book_.restarts_total;
    persist(job);
  } else if (const auto* started = ev.as<events::Started>();
             started && !started->run_dir.empty() && !job.rec.run_dir.empty()) {
    link_run_records(job.rec.run_dir, started->run_dir);
  }
  if (auto next = state_after_supervisor_event(job.rec.state, ev.payload)) {
    int attempt = attempt_of(ev.payload);
    const auto& after = job.run.previous_failure;
    std::string reason = *next == JobState::Running
                             ? fmt::format("ranks started (run {}, attempt {})", job.rec.runs - 1, attempt)
                             : fmt::format("worker-group restart {} of {} after {}", attempt,
                                           job.spec.distributed.max_restarts, after.empty() ? "a failure" : after);
    set_state(job, *next, reason);
  }
}

// ---------------------------------------------------------------------------------------------
// The end of a run: success, cancel, retry or failure

void JobManager::on_supervisor_exit(Job& job, std::optional<ExitStatus> supervisor_exit) {
  read_events(job);
  settle(job, supervisor_exit);
}

std::optional<std::string> JobManager::no_retry_match(const Job& job) const {
  if (job.spec.restart.no_retry_log_patterns.empty() || job.rec.run_dir.empty()) return std::nullopt;
  std::vector<UserRegex> res;  // RE2: a megabyte of one log line cannot crash the daemon (user_regex.hpp)
  for (const auto& p : job.spec.restart.no_retry_log_patterns) res.emplace_back(p);
  if (!executor_of(job).uses_host_resources()) {  // one output file holds every rank's lines
    auto out = executor_of(job).log_path(job.rec.run_dir, run_handle(job.rec), "0", "stdout");
    auto text = out ? read_file_tail(*out, 1 << 20) : std::string();
    for (std::size_t i = 0; i < res.size(); ++i) {
      if (res[i].search(text)) return job.spec.restart.no_retry_log_patterns[i];
    }
    return std::nullopt;
  }
  auto logs = fs::path(job.rec.run_dir) / "logs";
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(logs, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    auto name = it->path().filename().string();
    if (name != "stdout.log" && name != "stderr.log") continue;
    auto text = read_file_tail(it->path(), 1 << 20);
    for (std::size_t i = 0; i < res.size(); ++i) {
      if (res[i].search(text)) return job.spec.restart.no_retry_log_patterns[i];
    }
  }
  return std::nullopt;
}

void JobManager::settle(Job& job, std::optional<ExitStatus> supervisor_exit) {
  if (job.timeout_timer) job.timeout_timer->cancel();
  if (job.kill_timer) job.kill_timer->cancel();
  if (job.events_watch) events_.unwatch(*job.events_watch);
  job.events_watch.reset();
  executor_of(job).forget(job.rec.id);
  scheduler_.release(job.rec.id);
  ++book_.generation;
  auto verdict = judge_run(job.run, RunEnd{supervisor_exit, job.rec.exit_code, job.rec.pid, job.rec.run_dir});
  job.rec.pid = 0;
  job.rec.external_id.clear();
  job.rec.exit_code = verdict.exit_code;
  if (verdict.succeeded) {
    set_state(job, JobState::Succeeded, verdict.text);
  } else if (job.cancel_requested) {
    set_state(job, job.cancel_final, job.cancel_reason);
  } else {
    const auto& what = verdict.text;
    auto decision = decide_retry(job.spec, job.rec.runs, job.run.first_failure_code, no_retry_match(job));
    if (decision.retry) {
      job.rec.restarts += 1;
      ++book_.restarts_total;
      job.rec.retry_at = now() + decision.delay_s;  // persisted with the state: survives a restart
      set_state(job, JobState::Restarting, what + "; " + decision.reason);
      arm_retry(job, decision.delay_s);
    } else {
      set_state(job, JobState::Failed,
                job.spec.restart.policy == RestartPolicy::Never ? what : what + "; not retried: " + decision.reason);
    }
  }
  schedule();
}

void JobManager::arm_retry(Job& job, double delay_s) {
  job.retry_timer = std::make_unique<asio::steady_timer>(io_);
  job.retry_timer->expires_after(std::chrono::milliseconds(static_cast<long>(std::max(0.0, delay_s) * 1000)));
  job.retry_timer->async_wait([this, id = job.rec.id](boost::system::error_code ec) {
    if (ec) return;
    auto& j = find(id);
    if (j.rec.state == JobState::Restarting && !j.run_live()) enqueue(j);
  });
}

// ---------------------------------------------------------------------------------------------
// Cancel and timeout

void JobManager::stop_supervisor(Job& job, const std::string& reason, JobState final_state) {
  job.cancel_requested = true;
  job.cancel_final = final_state;
  job.rec.cancel_final = final_state;  // persisted with the CANCELLING state below: a restarted daemon ends it so
  job.cancel_reason = reason;
  set_state(job, JobState::Cancelling, reason);
  if (job.submitting) return;  // stopped as soon as it has a handle
  executor_of(job).stop(job.rec.id, run_handle(job.rec), false);
  job.kill_timer = std::make_unique<asio::steady_timer>(io_);
  auto grace = std::chrono::milliseconds(static_cast<long>(job.spec.distributed.shutdown_grace_s * 1000)) +
               std::chrono::seconds(5);
  job.kill_timer->expires_after(grace);
  job.kill_timer->async_wait([this, id = job.rec.id](boost::system::error_code ec) {
    if (ec) return;
    auto& j = find(id);
    if (!j.run_live()) return;
    if (j.rec.pid != 0) {
      spdlog::warn("job {}: the supervisor (pid {}) outlived its grace; killing it (its ranks die with it)", id,
                   j.rec.pid);
    } else {
      spdlog::warn("job {}: {} job {} still runs after its grace; cancelling it again", id, executor_of(j).name(),
                   j.rec.external_id);
    }
    executor_of(j).stop(id, run_handle(j.rec), true);
  });
}

json JobManager::cancel(JobId id) {
  auto& job = find(id);
  switch (job.rec.state) {
    case JobState::Succeeded:
    case JobState::Failed:
    case JobState::Cancelled:
      throw JobError(JobErrorKind::Conflict,
                     fmt::format("job {} already finished ({})", id, state_name(job.rec.state)));
    case JobState::Cancelling: break;
    case JobState::Pending:
      scheduler_.dequeue(id);
      ++book_.generation;
      set_state(job, JobState::Cancelled, "cancelled by request before it started");
      break;
    default:
      if (!job.run_live() && !job.submitting) {  // RESTARTING: waiting out the back-off or queued for resources
        if (job.retry_timer) job.retry_timer->cancel();
        scheduler_.dequeue(id);
        ++book_.generation;
        set_state(job, JobState::Cancelled, "cancelled by request while waiting to retry");
      } else {
        stop_supervisor(job, "cancelled by request", JobState::Cancelled);
      }
  }
  return views_.to_json(job, false);
}

}  // namespace ddp::jobs
