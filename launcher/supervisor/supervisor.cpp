#include "launcher/supervisor/supervisor.hpp"

#include "launcher/supervisor/supervisor_run.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace ddp::launcher {

using sig::signal_name;

// Each unit gets its narrow part of the config (supervisor_run.hpp).
WorkerStoreConfig worker_store_config(const SupervisorConfig& c) {
  return WorkerStoreConfig{
      .mode = c.store_mode,
      .master_addr = c.master_addr,
      .master_port = c.master_port,
      .node_rank = c.plan.node_rank,
      .nnodes = c.plan.nnodes,
      .filestore = c.filestore_path.empty() ? c.run_dir / "filestore" : c.filestore_path,
      .dynamic_host = c.dynamic ? c.dynamic->endpoint_host : std::string(),
  };
}

RunOutputsConfig run_outputs_config(const SupervisorConfig& c) {
  return RunOutputsConfig{.run_dir = c.run_dir,
                          .remove_run_dir = c.remove_run_dir,
                          .metric_patterns = c.metric_patterns,
                          .duplicate_filters = c.duplicate_filters};
}

WarmStartConfig warm_start_config(const SupervisorConfig& c) {
  return WarmStartConfig{.enabled = c.warm_start,
                         .worker_argv = c.worker_argv,
                         .can_restart = c.max_restarts > 0 || c.dynamic.has_value(),
                         .run_dir = c.run_dir};
}

namespace {

// --checkpoint-file's iteration now: nullopt when there is no file or it does not hold one integer.
std::optional<std::int64_t> read_checkpoint(const fs::path& file) {
  if (file.empty()) return std::nullopt;
  std::ifstream in(file, std::ios::binary);
  if (!in) return std::nullopt;
  std::string text(64, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  return parse_checkpoint_iteration(text);
}

SupervisorPolicy policy_with_checkpoint(const SupervisorConfig& config) {
  auto p = supervisor_policy(config);
  p.checkpoint_at_start = read_checkpoint(config.checkpoint_file);
  return p;
}

}  // namespace

Supervisor::Supervisor(const SupervisorConfig& config)
    : config_(config),
      plan_(plan_ranks(config.plan)),
      machine_(policy_with_checkpoint(config)),
      cgroups_(config.run_id, config.memory_limit_per_rank),
      // If we die, the run's cgroups go too (POSIX: in the guardian; Windows: no cgroups).
      containment_(platform::Containment::start(
          [dirs = cgroups_.dirs()] { kill_and_remove_run_cgroups(dirs, std::chrono::milliseconds(2000)); })),
      signals_(io_),
      exits_(io_,
             [this](const platform::ChildExit& x) {
               if (x.tag == WarmStart::kTag) return warm_.exited(x);
               workers_.exited(x, [this](Worker& w, const RankExit& r) { on_reaped(w, r); });
             }),
      grace_timer_(io_),
      backoff_timer_(io_),
      drain_timer_(io_),
      events_(config.events_path),
      record_(RunRecordPaths{config.run_dir, config.processes_file, config.log_base_dir}),
      store_(io_, worker_store_config(config), events_),
      rendezvous_watch_(
          io_, config.rendezvous_timeout, config.plan.nnodes,
          {.world_size = [this] { return plan_.front().world_size; },
           .evidence = [this] { return store_.evidence(master_addr_, master_port_, workers_.alive_ranks()); },
           .timed_out = [this](int attempt, int world, const RendezvousEvidence& ev,
                               const RendezvousJudgment& j) { on_rendezvous_timeout(attempt, world, ev, j); }}),
      out_(run_outputs_config(config), describe_run(config, plan_)),
      router_(io_, out_.console, out_.files, out_.metrics, out_.filtered,
              [this] {
                maybe_finish_drained();
                maybe_restart_drained();
              }),
      progress_(io_, config.hang_timeout,
                {.hung = [this](const HangVerdict& v) { on_hang(v); },
                 .notice = [](const std::string& text) { spdlog::warn("{}", text); }}),
      gpu_watch_(
          io_, config.gpu_watch, global_ranks(plan_), cuda_visible_devices(config),
          [this](const GpuSample& s) { on_gpu_sample(s); },
          [this](const GpuSample& s, const LowUtilAlert& a, const std::string& text) { on_gpu_low(s, a, text); }),
      master_addr_(ranks_master_addr(config.master_addr)),
      node_name_(config.node_name.empty() ? default_node_name() : config.node_name) {
  // A file that cannot be written (a full disk): said at once, on the loop; the writer goes on.
  out_.files.on_failure([this](const FileWriter::Failure& f) { asio::post(io_, [this, f] { on_write_failed(f); }); });
  workers_.warm_from([this](int rank, const WorkerLaunch& launch,
                            const std::vector<platform::NativeHandle>& cgroup_procs,
                            const std::vector<int>& cpus) { return warm_.spawn(rank, launch, cgroup_procs, cpus); });
  if (config.straggler_threshold) stragglers_.emplace(*config.straggler_threshold);
  out_.metrics.on_worker_row = [this](const MetricRow& row) { on_metric_row(row); };
}

int Supervisor::run() {
  // Handled from the start: a signal while the supervisor waits for a rendezvous round (before
  // any worker exists) ends the run at once, as torchrun's.
  // (Windows delivers SIGINT, SIGTERM and SIGHUP only: Ctrl-C, Ctrl-Break, the console closing.)
  for (int s : config_.handled_signals) signals_.add(s);
  sweep_predecessor();
  // A temporary run directory is garbage once the guardian has cleaned up after a SIGKILLed us.
  if (config_.remove_run_dir) containment_.remove_on_death(config_.run_dir);
  record_processes();
  watch_progress();
  try {
    if (config_.dynamic) start_rendezvous();
    prepare_store();
    // launcher/supervisor/filestore_watch.hpp: what the paths the workers name are before any of them runs.
    filestores_.snapshot(config_.worker_argv, config_.base_env, multi_node(),
                         std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(),
                         {containment_.pid()});
    file_timer_.start();  // TORCHELASTIC_ENABLE_FILE_TIMER=1: torch's elastic timer, served here
  } catch (...) {
    forget_startup();  // e.g. a FileStore in use: nothing ran, so nothing of this run stays behind
    throw;
  }
  arm_signals();
  events_.emit(started_event(
      config_,
      StartFacts{.world_size = plan_.front().world_size,
                 .filestore = store_.filestore().string(),
                 .master_port = master_port_,
                 .supervisor_pid = static_cast<int>(platform::current_pid()),
                 .cgroup = cgroups_.v2_dir().empty() ? std::nullopt : std::optional(cgroups_.v2_dir().string()),
                 .memory_cgroup = cgroups_.memory_accounting()}));
  if (rdzv_) {
    join_round();  // the group starts when the first round closes
  } else {
    dispatch(input::Start{});
  }
  if (!rdzv_) gpu_watch_.start();  // dynamic: at the first round, labelled with its ranks
  io_.run();
  return exit_code_;
}

std::string Supervisor::ranks_master_addr(const std::string& name) {
  if (!config_.numeric_master_addr) return name;
  if (auto it = numeric_addrs_.find(name); it != numeric_addrs_.end()) return it->second;
  std::string why;
  auto numeric = platform::numeric_address(platform::resolve_host(name), &why);
  if (!numeric) {
    spdlog::warn("the store host {} does not resolve to a usable address ({}): the ranks get MASTER_ADDR={} as is",
                 name, why, name);
  } else if (*numeric != name) {
    spdlog::info("MASTER_ADDR for the ranks: {} ({} resolved once)", *numeric, name);
  }
  return numeric_addrs_[name] = numeric.value_or(name);
}

void Supervisor::forget_startup() {
  record_.remove();
  std::error_code ec;
  if (config_.remove_run_dir) fs::remove_all(config_.run_dir, ec);
}

void Supervisor::record_processes() {
  if (record_.disabled()) return;
  RunRecordContent r;
  r.supervisor = recorded_process(platform::current_pid());
  r.guardian = recorded_process(containment_.pid());
  r.attempt = machine_.attempt();
  r.cgroups = cgroups_.dirs();
  r.filestores = recorded_filestores();
  r.workers = workers_.recorded();
  record_.write(r);
}

std::vector<std::string> Supervisor::recorded_filestores() const {
  std::vector<std::string> out;
  if (!store_.filestore().empty()) out.push_back(store_.filestore().string());  // already absolute
  for (const auto& used : filestores_.used()) out.push_back(used);              // found by the watch
  for (const auto& n : filestores_named_by(config_.worker_argv, config_.base_env, config_.store_mode == StoreMode::File,
                                           store::native_path_style())) {
    std::error_code ec;
    out.push_back(std::filesystem::absolute(n.path, ec).string());
  }
  return out;
}

void Supervisor::sweep_predecessor() {
  record_.sweep_predecessors([this](const SweptPredecessor& s) {
    events_.emit(
        events::SweptPredecessor{.supervisor_pid = s.supervisor_pid, .pids = {s.killed.begin(), s.killed.end()}});
  });
}

void Supervisor::watch_progress() {
  router_.on_output([this](const RankOutput& r) {
    if (r.attempt != machine_.attempt()) return;
    progress_.on_progress(r.local_rank);
    on_attempt_heard_from(r.attempt, /*after_rendezvous_only=*/true);
    // A healthy run's FileStore goes into the run record too (launcher/supervisor/filestore_watch.hpp),
    // looked for at most once a second while the ranks talk.
    if (filestores_.look_for_used(r.attempt)) record_processes();
  });
}

void Supervisor::start_rendezvous() {
  auto rc = *config_.dynamic;
  rc.local_addr = node_name_;
  // One budget for the job, kept by the rendezvous host (the host's flags are the job's).
  rc.policy.budget = machine_.budget_policy();
  rdzv_ = Rendezvous::create(
      io_, rc,
      {.assigned = [this](const RoundAssignment& a) { on_round(a); },
       .round_ended = [this](const std::string& reason) { on_round_ended(reason); },
       .closed = [this](const std::string& reason,
                        const std::optional<RestartDecision>& restart) { on_rendezvous_closed(reason, restart); },
       .node_lost =
           [this](const std::string& host, std::chrono::milliseconds silent, const std::string& reason) {
             events_.emit(events::NodeLost{.host = host, .silent_ms = silent.count(), .reason = reason});
           }});
}

void Supervisor::on_round(const RoundAssignment& a) {
  round_ = a.round;
  master_addr_ = ranks_master_addr(a.master_addr);
  master_port_ = a.master_port;
  plan_ = plan_for_round(config_.plan, a);
  gpu_watch_.on_round(global_ranks(plan_));  // the round's global ranks label the GPU samples
  gpu_watch_.start();
  spdlog::info("rendezvous round {}: node rank {} of {}, ranks {}..{} of {}", a.round, a.node_rank, a.nnodes,
               a.rank_base, a.rank_base + a.nproc - 1, a.world_size);
  events_.emit(rendezvous_complete_event(a));
  if (machine_.state() == GroupState::Init) {
    dispatch(input::Start{});
    return;
  }
  dispatch(input::RoundAdmitted{a.membership_changed, a.restart});  // the host charged the job's budget, or not
  if (a.restart) {
    // The job restarts after a failed round: the same decision on every node, whichever failed.
    spdlog::warn("round {} failed; restarting as round {}: {} (the job's restart budget, kept by the rendezvous host)",
                 a.round - 1, a.round, a.restart->text(machine_.budget_policy()));
    events_.emit(restarting_event(next_attempt_ >= 0 ? next_attempt_ : machine_.attempt() + 1, a.restart,
                                  machine_.restarts_left(), std::chrono::milliseconds(0)));
  }
  if (machine_.finished_with()) {
    spdlog::error("leaving the job");
  } else if (next_attempt_ >= 0) {
    dispatch(input::BackoffExpired{std::exchange(next_attempt_, -1)});
  }
}

void Supervisor::on_round_ended(const std::string& reason) {
  if (machine_.state() != GroupState::Running) return;  // already stopping, or rejoining
  spdlog::warn("rendezvous round {} is over ({}): stopping the workers to rejoin", round_, reason);
  events_.emit(events::RoundEnded{.round = round_, .reason = reason});
  dispatch(input::RoundEnded{false, std::nullopt});
}

void Supervisor::on_rendezvous_closed(const std::string& reason, const std::optional<RestartDecision>& restart) {
  if (machine_.finished_with()) return;  // we ended it ourselves
  spdlog::error("rendezvous: {}", reason);
  rdzv_close_reason_ = reason;
  events_.emit(events::RendezvousClosed{.round = round_, .reason = reason});
  dispatch(input::RoundEnded{true, restart});
}

void Supervisor::join_round() {
  RdzvAttemptReport last;
  if (machine_.state() == GroupState::Init) {
    last.mark.checkpoint = machine_.policy().checkpoint_at_start;  // the baseline an attempt must pass
  } else {
    last = {.round = round_, .failed = machine_.own_failure(), .mark = machine_.progress()};
  }
  rdzv_->join(last);
}

void Supervisor::prepare_store() {
  master_port_ = store_.prepare(rdzv_.get(), containment_.pid(), [this](std::int64_t n) { on_store_arrivals(n); });
}

void Supervisor::on_store_arrivals(std::int64_t arrived) {
  if (arrived >= 1 && timeline_.attempt() == machine_.attempt()) {
    timeline_.note(RestartPhase::InterpreterReady, now_seconds());
    if (arrived >= plan_.front().world_size && !rdzv_) timeline_.note(RestartPhase::StoreReached, now_seconds());
  }
  if (!rendezvous_watch_.on_arrivals(arrived) || rdzv_) return;  // dynamic: the rounds announce themselves
  events_.emit(rendezvous_complete_event(machine_.attempt(), plan_.front().world_size, config_.plan.nnodes));
}

void Supervisor::arm_signals() {
  signals_.async_wait([this](const boost::system::error_code& ec, int signo) {
    if (ec || machine_.finish_stage() == FinishStage::Exited) return;
    if (machine_.finished_with()) {
      // Finishing: waiting for the other nodes at the exit barrier, or for the last output.
      // torchrun's agent re-raises a signal there too: stop waiting, 128+signo (action::Exit).
      spdlog::warn("received {} while finishing; not waiting any longer", signal_name(signo));
      drain_timer_.cancel();
      dispatch(input::SignalReceived{signo});
      return;
    }
    spdlog::warn("received {}; stopping the workers", signal_name(signo));
    dispatch(input::SignalReceived{signo});
    arm_signals();
  });
}

void Supervisor::on_reaped(Worker& worker, const RankExit& x) {
  if (hang_response_.busy()) {  // its exit is the stack collection's: acted on after it
    held_exits_.emplace_back(&worker, x);
    return;
  }
  Worker* w = &worker;
  int attempt = machine_.attempt();
  // The attempt's first failure: the files the ranks still alive hold open, before the teardown
  // ends them (a FileStore only their script names: launcher/supervisor/filestore_watch.hpp). A few /proc reads.
  if (x.failed() && machine_.state() == GroupState::Running) filestores_.note_open_files(live_worker_pids());
  // The iteration the attempt reached, for the restart budget (one small read; only with --checkpoint-file).
  if (!config_.checkpoint_file.empty()) {
    machine_.on(input::ProgressSeen{attempt, {.checkpoint = read_checkpoint(config_.checkpoint_file), .step = {}}});
  }
  auto actions = machine_.on(input::RankExited{x});
  progress_.forget(x.local_rank);
  // The peers' teardown signal goes out before anything is written: the event file is off the
  // critical path of failure detection. The stream still reads rank_exited, then group_stopping.
  for (const auto& a : actions) {
    if (const auto* sg = std::get_if<action::SignalGroup>(&a)) signal_live_workers(sg->signo);
  }
  // Read after the peers were signalled: off the critical path.
  w->oom = oom_kill_evidence(cgroups_, attempt, x.local_rank, x.pid, x.signal);
  events_.emit(events::RankExited{.attempt = attempt,
                                  .rank = w->ranks.rank,
                                  .local_rank = x.local_rank,
                                  .pid = x.pid,
                                  .status = ExitStatus::of(x.exit_code, x.signal),
                                  .oom = w->oom.has_value()});
  for (const auto& a : actions) {
    if (const auto* sg = std::get_if<action::SignalGroup>(&a)) {
      announce_stopping(sg->signo);
    } else {
      std::visit([this](const auto& act) { perform(act); }, a);
    }
  }
}

void Supervisor::dispatch(const Input& e) {
  for (const auto& action : machine_.on(e)) std::visit([this](const auto& a) { perform(a); }, action);
}

void Supervisor::perform(const action::ResetStore&) {
  if (!rdzv_) store_.reset_state();  // dynamic: reset when the round is published
  // Every attempt meets in a fresh file: the last one's keys (and a torn tail) must not leak in.
  // The previous group is dead and swept, so the file is ours to remove.
  if (machine_.attempt() > 0) store_.remove_filestore("a fresh one for the restart");
}

void Supervisor::perform(const action::SpawnGroup& a) {
  stopping_announced_ = false;
  attempt_started_ = std::chrono::steady_clock::now();
  if (timeline_.attempt() == a.attempt) timeline_.note(RestartPhase::SpawnBegan, now_seconds());
  rendezvous_watch_.begin(a.attempt);
  workers_.retire();  // their pipes' aborted reads complete on live objects (worker_group.hpp)
  file_timer_.new_attempt();
  out_.begin_attempt(a.attempt);
  // Beside the ranks' directories (the daemon reads only numbered entries there).
  progress_.watch_heartbeats(config_.run_dir / fmt::format("attempt_{}", a.attempt) / "heartbeats");
  cgroups_.remove_attempts(std::chrono::milliseconds(0));
  spawn_when_warm(a.attempt, std::chrono::steady_clock::now());
}

// A restart's ranks are forked once the warm-start process has imported torch (launcher/supervisor/warm_start.hpp),
// waited for at most 30 s on the loop's timer, not in it: a signal or a round's news meanwhile is acted on.
void Supervisor::spawn_when_warm(int attempt, std::chrono::steady_clock::time_point since) {
  constexpr auto kBound = std::chrono::seconds(30);
  const bool still_wanted = machine_.state() == GroupState::Running && machine_.attempt() == attempt;
  if (still_wanted && !warm_.settled()) {
    if (std::chrono::steady_clock::now() - since < kBound) {
      warm_timer_.expires_after(std::chrono::milliseconds(20));
      warm_timer_.async_wait([this, attempt, since](boost::system::error_code ec) {
        if (!ec) spawn_when_warm(attempt, since);
      });
      return;
    }
    warm_.stop_waiting(kBound);
  }
  spawn_from(attempt, 0);  // it learns of a group stopped meanwhile (input::SpawnAbandoned)
}

void Supervisor::spawn_from(int attempt, std::size_t next) {
  if (machine_.state() != GroupState::Running || machine_.attempt() != attempt) {
    spdlog::warn("stopped spawning the worker group: {} of {} ranks started", next, plan_.size());
    record_processes();
    dispatch(input::SpawnAbandoned{attempt, static_cast<int>(next)});
    return;
  }
  constexpr std::size_t kPerTurn = 8;
  const std::size_t end = std::min(plan_.size(), next + kPerTurn);
  for (; next < end; ++next) spawn(plan_[next], attempt);
  if (next < plan_.size()) {
    asio::post(io_, [this, attempt, next] { spawn_from(attempt, next); });
    return;
  }
  // Never a silent freeze at rendezvous (launcher/rendezvous/rendezvous_watch.hpp). Without our own store
  // (rank0, file) the evidence is weaker: launcher/rendezvous/rendezvous_evidence.hpp.
  if (store_.hosted() || config_.store_mode != StoreMode::Agent) rendezvous_watch_.arm(attempt);
  progress_.begin(attempt, global_ranks(plan_), plan_.front().world_size);  // launcher/hang/progress_watch.hpp
  if (const Worker* first = workers_.of(plan_.front().local_rank); first && first_launch_)
    warm_.after_spawn(*first_launch_, first->pid);  // launcher/supervisor/warm_start.hpp
  if (timeline_.attempt() == attempt) timeline_.note(RestartPhase::Spawned, now_seconds());
  record_processes();
}

void Supervisor::perform(const action::SignalGroup& a) {
  signal_live_workers(a.signo);
  announce_stopping(a.signo);
}

void Supervisor::signal_live_workers(int signo) {
  if (signo == sig::kKill) spdlog::warn("killing the remaining workers");
  workers_.signal(signo);
}

void Supervisor::announce_stopping(int signo) {
  if (machine_.state() == GroupState::Stopping && !stopping_announced_) {
    stopping_announced_ = true;
    stopping_at_ = now_seconds();
    end_timeline(machine_.attempt());  // the restarted attempt failed before its first progress
    progress_.stop();
    events_.emit(events::GroupStopping{.attempt = machine_.attempt(), .signal = signal_name(signo)});
  }
}

void Supervisor::perform(const action::ArmGrace& a) {
  grace_timer_.expires_after(a.after);
  grace_timer_.async_wait([this, attempt = a.attempt](boost::system::error_code ec) {
    if (!ec) dispatch(input::GraceExpired{attempt});
  });
}

void Supervisor::perform(const action::Finish& a) {
  exit_code_ = a.exit_code;
  end_timeline(machine_.attempt());
  // A rendezvous that ended the job said why already (the job's budget: rendezvous_close_reason).
  if (const auto& d = machine_.restart_decision();
      d && d->verdict != RestartVerdict::Restart && rdzv_close_reason_.empty()) {
    spdlog::error("attempt {} failed: {}", machine_.attempt(), d->text(machine_.budget_policy()));
  }
  pending_restart_.reset();  // a signal during the drain before a restart ends the job instead
  gpu_gate_.cancel();
  sweep();
  grace_timer_.cancel();
  backoff_timer_.cancel();
  rendezvous_watch_.cancel();
  progress_.stop();
  // Let the pipes drain what the workers printed last, briefly.
  drain_timer_.expires_after(std::chrono::milliseconds(500));
  drain_timer_.async_wait([this](boost::system::error_code) { dispatch(input::OutputDrained{}); });
  maybe_finish_drained();
}

void Supervisor::maybe_finish_drained() {
  if (!machine_.finished_with() || !workers_.drained()) return;
  drain_timer_.cancel();
}

void Supervisor::perform(const action::JoinExitBarrier& a) {
  rdzv_->finish(a.exit_code == 0, fmt::format("its job ended with exit code {}", a.exit_code),
                [this] { dispatch(input::ExitBarrierPassed{}); });
}

void Supervisor::perform(const action::Exit& a) {
  exit_code_ = a.exit_code;
  out_.flush();
  if (machine_.state() != GroupState::Succeeded) report_failures(true);
  report_output_losses();
  if (machine_.state() == GroupState::Succeeded && machine_.attempt() > 0) {
    out_.console.drain(std::chrono::seconds(2));  // after the workers' last lines
    spdlog::info("job succeeded on attempt {} after {} restart(s) (--max-restarts {})", machine_.attempt(),
                 machine_.attempt(), config_.max_restarts);
  }
  events_.emit(finished_event(exit_code_, machine_));
  warm_.stop();
  exits_.stop();
  workers_.stop_reading();
  store_.stop();
  file_timer_.stop();
  cgroups_.kill_all();
  cgroups_.remove_attempts(std::chrono::milliseconds(1000));
  store_.remove_filestore("the job is over");
  record_.remove();
  gpu_watch_.stop();
  out_.finish(exit_code_, machine_.attempt() + 1);
  containment_.finish();
  io_.stop();
}

void Supervisor::sweep() {
  workers_.kill_all();
  cgroups_.kill_all();
}

void Supervisor::spawn(const RankAssignment& ranks, int attempt) {
  auto w = std::make_unique<Worker>(io_);
  w->ranks = ranks;
  w->output.prefix = rank_line_prefix(config_.line_prefix_template, ranks, multi_node(), node_name_);
  w->output.attempt = attempt;
  w->output.rank = ranks.rank;
  w->output.local_rank = ranks.local_rank;
  fs::path dir = out_.rank_dir(attempt, ranks.local_rank);
  w->error_file = dir / "error.json";
  auto local = static_cast<std::size_t>(ranks.local_rank);

  // Dynamic: every node's workers of a round share one attempt number (torch 1.13's key prefix).
  auto in = worker_env_input(config_, ranks, master_addr_, master_port_, rdzv_ ? round_ : attempt,
                             w->error_file.string(), store_.filestore().string());
  in.timer_file = file_timer_.path();
  in.heartbeat_file = progress_.heartbeat_file(ranks.local_rank);
  auto launch = make_worker_launch(in, config_.worker_argv);
  if (ranks.local_rank == plan_.front().local_rank) first_launch_ = launch;

  Worker& started = *w;
  auto child = workers_.start(std::move(w), launch, cgroups_.prepare_rank(attempt, ranks.local_rank),
                              local < config_.cpu_affinity.size() ? config_.cpu_affinity[local] : std::vector<int>{});
  // Its log files exist before anyone reads of it (the daemon's `logs -f` opens them then).
  router_.start(started.output, child.stdout_fd, child.stderr_fd,
                route_rank(config_.redirects, config_.tee, config_.console_ranks, ranks.local_rank), dir);
  for (const auto* s : {&started.output.out, &started.output.err}) {
    if (s->file) log_owners_[*s->file] = {attempt, ranks.rank, ranks.local_rank, s == &started.output.err};
  }
  events_.emit(
      events::RankStarted{.attempt = attempt, .rank = ranks.rank, .local_rank = ranks.local_rank, .pid = child.pid()});
}

int run_supervisor(const SupervisorConfig& config) {
  platform::ignore_broken_pipes();
  Supervisor supervisor(config);
  return supervisor.run();
}

}  // namespace ddp::launcher
