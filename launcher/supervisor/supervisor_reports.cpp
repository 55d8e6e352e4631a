// What the supervisor says: a failure's summary and the FileStores found behind it, a hang and its
// evidence, a rendezvous that timed out, a file it could not write, the timer's kills and GPU samples.
// The class: supervisor_run.hpp.
#include "launcher/supervisor/supervisor_run.hpp"

namespace ddp::launcher {

void Supervisor::on_rendezvous_timeout(int attempt, int world, const RendezvousEvidence& ev,
                                       const RendezvousJudgment& j) {
  spdlog::error("{}", j.report);
  events_.emit(events::RendezvousTimeout{
      .attempt = attempt, .arrived = ev.arrived, .world_size = world, .missing_local_ranks = j.missing});
  dispatch(input::RendezvousTimeout{attempt});
}

void Supervisor::on_hang(const HangVerdict& v) {
  if (machine_.state() != GroupState::Running || v.attempt != machine_.attempt() || hang_response_.busy()) return;
  hang_ = v;
  hang_evidence_.reset();
  std::string stopped;  // silence explained: a stopped rank (SIGSTOP, a debugger) cannot progress
  for (const auto& r : v.silent) {
    const Worker* w = workers_.of(r.local_rank);
    if (!w || !w->alive) continue;
    if (auto st = proc::stopped(w->pid)) {
      stopped += fmt::format("\n    rank {} (pid {}): {}", r.rank, w->pid, stopped_rank_text(w->pid, *st));
    }
  }
  spdlog::error("hang detected: {}{}; taking every rank's stacks before stopping the group", hang_report(v), stopped);
  HangResponseRequest req;
  const auto dir = config_.run_dir / fmt::format("attempt_{}", v.attempt);
  req.stacks_file = dir / "hang_stacks.txt";
  req.suspect = v.suspect().rank;
  if (uses_nccl(config_.backend, config_.base_env)) {
    req.nccl_store = store_.server();
    req.nccl_prefix = (dir / "nccl_trace_rank_").string();
  }
  for (const auto& r : plan_) {
    Worker* w = workers_.of(r.local_rank);
    if (w && w->alive) req.targets.push_back({r.rank, r.local_rank, w->pid, &w->output});
  }
  hang_response_.gather(std::move(req), [this, v](HangEvidence e) { on_hang_evidence(v, std::move(e)); });
}

void Supervisor::on_hang_evidence(const HangVerdict& v, HangEvidence e) {
  const auto& file = e.stacks.stacks_file;
  events_.emit(hang_detected_event(v, file.empty() ? std::nullopt : std::optional(file.string())));
  if (!file.empty()) out_.keep(fmt::format("the hung attempt {}'s stacks: {}", v.attempt, file.string()));
  hang_evidence_ = std::move(e);
  dispatch(input::HangDetected{v.attempt});
  for (auto [w, x] : std::exchange(held_exits_, {})) on_reaped(*w, x);
}

bool Supervisor::report_failures(bool final) {
  auto in = failure_report_input(machine_, final);
  in.exit_code = exit_code_;
  in.rendezvous_report = rendezvous_watch_.report();
  in.rendezvous_close_reason = rdzv_close_reason_;
  in.hang = hang_;
  if (hang_evidence_) in.hang_evidence = hang_evidence_text(*hang_evidence_);
  in.node_rank = config_.plan.node_rank;
  in.node_name = node_name_;
  in.worker_argv = config_.worker_argv;
  for (const auto& f : in.failures) in.evidence.push_back(workers_.evidence(f.exit.local_rank));
  auto report = failure_report(in);
  auto found = report.text.empty() ? std::vector<FoundFileStore>{} : filestores_.check(run_pids());
  for (const auto& f : found) report.text += fmt::format("  {}\n", f.text);
  if (report.root_cause) events_.emit(root_cause_event(*report.root_cause));
  if (!report.text.empty()) out_.console.write(stderr, report.text);
  return settle_found_filestores(found, final);
}

bool Supervisor::settle_found_filestores(const std::vector<FoundFileStore>& found, bool final) {
  bool removed_any = false;
  for (const auto& f : found) {
    bool removed = false;
    if (!final && f.removable()) {
      std::string why;
      removed = filestores_.remove(f, run_pids(), why);
      if (!removed) spdlog::warn("kept FileStore {}: {}", f.path, why);
    }
    const bool cleared = removed || (!final && f.cleared());
    removed_any = removed_any || cleared;
    events_.emit(events::FilestoreFound{.attempt = machine_.attempt(),
                                        .path = f.path,
                                        .verdict = std::string(to_string(f.verdict)),
                                        .age_s = f.age_s,
                                        .removed = removed,
                                        .text = f.text});
    if (cleared) {
      const auto age =
          f.age_s ? fmt::format(" (last written {} before this run started)", describe_age(*f.age_s)) : std::string();
      stale_removed_ = removed ? fmt::format("removed the stale FileStore {}{}", f.path, age)
                               : fmt::format(
                                     "the stale FileStore {}{} is gone (the ranks' torch removed it as they "
                                     "exited)",
                                     f.path, age);
    }
  }
  if (!found.empty()) record_processes();
  return removed_any;
}

std::vector<pid_t> Supervisor::run_pids() const {
  std::vector<pid_t> pids{containment_.pid()};
  for (const auto& w : workers_.recorded()) pids.push_back(w.pid);
  return pids;
}

std::vector<pid_t> Supervisor::live_worker_pids() const {
  std::vector<pid_t> pids;
  for (const auto& r : plan_) {
    if (const Worker* w = workers_.of(r.local_rank); w && w->alive) pids.push_back(w->pid);
  }
  return pids;
}

void Supervisor::on_timer_expired(const TimerExpiry& e, double sent_at) {
  if (e.signal > 0) workers_.record_timer_kill(e, sent_at);
  events_.emit(timer_expired_event(machine_.attempt(), e));
}

std::optional<LogOwner> Supervisor::log_owner(FileWriter::FileId id) const {
  auto it = log_owners_.find(id);
  return it == log_owners_.end() ? std::nullopt : std::optional(it->second);
}

void Supervisor::on_write_failed(const FileWriter::Failure& f) {
  auto owner = log_owner(f.file);
  out_.console.write(stderr, write_failure_warning(f, owner));
  events_.emit(events::WriteFailed{.attempt = owner ? std::optional(owner->attempt) : std::nullopt,
                                   .rank = owner ? std::optional(owner->rank) : std::nullopt,
                                   .path = f.path.string(),
                                   .error = std::strerror(f.error)});
}

void Supervisor::report_output_losses() {
  for (const auto& loss : out_.files.losses()) {
    auto owner = log_owner(loss.failure.file);
    std::vector<std::string> last_stderr;
    if (owner && owner->is_stderr) {
      const Worker* w = workers_.of(owner->local_rank);
      if (w && w->output.attempt == owner->attempt) {
        last_stderr.assign(w->output.last_stderr.begin(), w->output.last_stderr.end());
      }
    }
    out_.console.write(stderr, output_loss_summary(loss, owner, last_stderr));
  }
}

void Supervisor::on_timer_request(int rank) {
  for (const auto& r : plan_) {
    if (r.rank == rank) progress_.on_progress(r.local_rank);
  }
}

void Supervisor::on_gpu_sample(const GpuSample& s) {
  events_.emit(gpu_sample_event(s));
  int attempt = machine_.attempt();
  out_.metrics.record({attempt, s.rank, std::nullopt, "gpu_util", static_cast<double>(s.sample.util_percent)});
  out_.metrics.record({attempt, s.rank, std::nullopt, "gpu_mem_used_mib", s.mem_used_mib()});
}

void Supervisor::on_gpu_low(const GpuSample& s, const LowUtilAlert& a, const std::string& text) {
  out_.console.write(stderr, fmt::format("[ddp-launch] warning: {}\n", text));
  events_.emit(gpu_low_util_event(s, a, text));
}

}  // namespace ddp::launcher
