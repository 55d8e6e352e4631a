#include "launcher/supervisor/supervisor.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "common/events.hpp"
#include "common/exit_status.hpp"
#include "common/signals.hpp"
#include "launcher/hang/file_timer_server.hpp"
#include "launcher/hang/gpu_watch.hpp"
#include "launcher/hang/hang_response.hpp"
#include "launcher/hang/progress_watch.hpp"
#include "launcher/outputs/event_log.hpp"
#include "launcher/outputs/log_router.hpp"
#include "launcher/outputs/metrics_recorder.hpp"
#include "launcher/outputs/run_record.hpp"
#include "launcher/rendezvous/rendezvous_watch.hpp"
#include "launcher/supervisor/failure_report.hpp"
#include "launcher/supervisor/filestore_guard.hpp"
#include "launcher/supervisor/filestore_watch.hpp"
#include "launcher/supervisor/gpu_release_gate.hpp"
#include "launcher/supervisor/restart_timeline.hpp"
#include "launcher/supervisor/run_outputs.hpp"
#include "launcher/supervisor/supervisor_events.hpp"
#include "launcher/supervisor/supervisor_machine.hpp"
#include "launcher/supervisor/warm_start.hpp"
#include "launcher/supervisor/worker_group.hpp"
#include "launcher/supervisor/worker_store.hpp"
#include "launcher/workers/cgroup.hpp"
#include "platform/child_exits.hpp"
#include "platform/containment.hpp"
#include "platform/host.hpp"
#include "platform/proc.hpp"
#include "platform/resolve.hpp"
#include "platform/stop_signals.hpp"
#include "store/filestore_cleaner.hpp"

namespace asio = boost::asio;
namespace fs = std::filesystem;

namespace ddp::launcher {
namespace {

using sig::signal_name;

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

class Supervisor {
 public:
  explicit Supervisor(const SupervisorConfig& config)
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
        store_(io_, config, events_),
        rendezvous_watch_(
            io_, config.rendezvous_timeout, config.plan.nnodes,
            {.world_size = [this] { return plan_.front().world_size; },
             .evidence = [this] { return store_.evidence(master_addr_, master_port_, workers_.alive_ranks()); },
             .timed_out = [this](int attempt, int world, const RendezvousEvidence& ev,
                                 const RendezvousJudgment& j) { on_rendezvous_timeout(attempt, world, ev, j); }}),
        out_(config, describe_run(config, plan_)),
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

  int run() {
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
      rdzv_->join();  // the group starts when the first round closes
    } else {
      dispatch(input::Start{});
    }
    if (!rdzv_) gpu_watch_.start();  // dynamic: at the first round, labelled with its ranks
    io_.run();
    return exit_code_;
  }

 private:
  // The ranks' MASTER_ADDR for the store host `name`: itself, or (numeric_master_addr) the address
  // it resolves to, looked up once per name. One that does not resolve is handed on as given, said once.
  std::string ranks_master_addr(const std::string& name) {
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

  // A start that failed before any worker: the process record (no successor needs it) and a
  // temporary run directory go; a --log-dir/--run-dir directory stays, as after any failed run.
  void forget_startup() {
    record_.remove();
    std::error_code ec;
    if (config_.remove_run_dir) fs::remove_all(config_.run_dir, ec);
  }

  // launcher/outputs/run_record.hpp: this supervisor, its guardian and the current attempt's workers.
  void record_processes() {
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

  // The FileStores this run's workers use: --store file's, and those their argv and environment name.
  std::vector<std::string> recorded_filestores() const {
    std::vector<std::string> out;
    if (!store_.filestore().empty()) out.push_back(store_.filestore().string());  // already absolute
    for (const auto& used : filestores_.used()) out.push_back(used);              // found by the watch
    for (const auto& n : filestores_named_by(config_.worker_argv, config_.base_env,
                                             config_.store_mode == StoreMode::File, store::native_path_style())) {
      std::error_code ec;
      out.push_back(std::filesystem::absolute(n.path, ec).string());
    }
    return out;
  }

  void sweep_predecessor() {
    record_.sweep_predecessors([this](const SweptPredecessor& s) {
      events_.emit(
          events::SweptPredecessor{.supervisor_pid = s.supervisor_pid, .pids = {s.killed.begin(), s.killed.end()}});
    });
  }

  // The hang watchdog's evidence: any output of the current attempt (and its heartbeat
  // files, watched from each attempt's spawn).
  void watch_progress() {
    router_.on_output([this](const RankOutput& r) {
      if (r.attempt != machine_.attempt()) return;
      progress_.on_progress(r.local_rank);
      on_attempt_heard_from(r.attempt, /*after_rendezvous_only=*/true);
      // A healthy run's FileStore goes into the run record too (launcher/supervisor/filestore_watch.hpp),
      // looked for at most once a second while the ranks talk.
      if (filestores_.look_for_used(r.attempt)) record_processes();
    });
  }

  bool multi_node() const { return config_.dynamic.has_value() || config_.plan.nnodes > 1; }

  // --rdzv-backend c10d: host the rendezvous store if we can bind the endpoint, else join it.
  void start_rendezvous() {
    auto rc = *config_.dynamic;
    rc.local_addr = node_name_;
    rdzv_ = Rendezvous::create(
        io_, rc,
        {.assigned = [this](const RoundAssignment& a) { on_round(a); },
         .round_ended = [this](const std::string& reason) { on_round_ended(reason); },
         .closed = [this](const std::string& reason) { on_rendezvous_closed(reason); },
         .node_lost =
             [this](const std::string& host, std::chrono::milliseconds silent, const std::string& reason) {
               events_.emit(events::NodeLost{.host = host, .silent_ms = silent.count(), .reason = reason});
             }});
  }

  void on_round(const RoundAssignment& a) {
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
    dispatch(input::RoundAdmitted{a.membership_changed});  // a failure is charged unless nodes changed
    if (machine_.finished_with()) {
      spdlog::error("leaving the job");
    } else if (next_attempt_ >= 0) {
      dispatch(input::BackoffExpired{std::exchange(next_attempt_, -1)});
    }
  }

  void on_round_ended(const std::string& reason) {
    if (machine_.state() != GroupState::Running) return;  // already stopping, or rejoining
    spdlog::warn("rendezvous round {} is over ({}): stopping the workers to rejoin", round_, reason);
    events_.emit(events::RoundEnded{.round = round_, .reason = reason});
    dispatch(input::RoundEnded{false});
  }

  void on_rendezvous_closed(const std::string& reason) {
    if (machine_.finished_with()) return;  // we ended it ourselves
    spdlog::error("rendezvous: {}", reason);
    rdzv_close_reason_ = reason;
    events_.emit(events::RendezvousClosed{.round = round_, .reason = reason});
    dispatch(input::RoundEnded{true});
  }

  void prepare_store() {
    master_port_ = store_.prepare(rdzv_.get(), containment_.pid(), [this](std::int64_t n) { on_store_arrivals(n); });
  }

  // Our store's count of the workers' clients reached the world size: the rendezvous is complete.
  void on_store_arrivals(std::int64_t arrived) {
    if (arrived >= 1 && timeline_.attempt() == machine_.attempt()) {
      timeline_.note(RestartPhase::InterpreterReady, now_seconds());
      if (arrived >= plan_.front().world_size && !rdzv_) timeline_.note(RestartPhase::StoreReached, now_seconds());
    }
    if (!rendezvous_watch_.on_arrivals(arrived) || rdzv_) return;  // dynamic: the rounds announce themselves
    events_.emit(rendezvous_complete_event(machine_.attempt(), plan_.front().world_size, config_.plan.nnodes));
  }

  void arm_signals() {
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

  void on_reaped(Worker& worker, const RankExit& x) {
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

  void dispatch(const Input& e) {
    for (const auto& action : machine_.on(e)) std::visit([this](const auto& a) { perform(a); }, action);
  }

  void perform(const action::ResetStore&) {
    if (!rdzv_) store_.reset_state();  // dynamic: reset when the round is published
    // Every attempt meets in a fresh file: the last one's keys (and a torn tail) must not leak in.
    // The previous group is dead and swept, so the file is ours to remove.
    if (machine_.attempt() > 0) store_.remove_filestore("a fresh one for the restart");
  }

  void perform(const action::SpawnGroup& a) {
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
    warm_.wait_ready(std::chrono::seconds(30));  // a restart's ranks: forked once torch is imported
    spawn_from(a.attempt, 0);
  }

  // A few ranks per turn of the event loop: a signal or a rank's failure meanwhile is acted on
  // between them, and stops the spawning (the machine learns which ranks never started).
  void spawn_from(int attempt, std::size_t next) {
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

  void perform(const action::SignalGroup& a) {
    signal_live_workers(a.signo);
    announce_stopping(a.signo);
  }

  void signal_live_workers(int signo) {
    if (signo == sig::kKill) spdlog::warn("killing the remaining workers");
    workers_.signal(signo);
  }

  void announce_stopping(int signo) {
    if (machine_.state() == GroupState::Stopping && !stopping_announced_) {
      stopping_announced_ = true;
      stopping_at_ = now_seconds();
      end_timeline(machine_.attempt());  // the restarted attempt failed before its first progress
      progress_.stop();
      events_.emit(events::GroupStopping{.attempt = machine_.attempt(), .signal = signal_name(signo)});
    }
  }

  void perform(const action::ArmGrace& a) {
    grace_timer_.expires_after(a.after);
    grace_timer_.async_wait([this, attempt = a.attempt](boost::system::error_code ec) {
      if (!ec) dispatch(input::GraceExpired{attempt});
    });
  }

  void perform(const action::ArmBackoff& a) {
    // launcher/supervisor/restart_timeline.hpp: from the failure seen, the group is gone now.
    timeline_.begin(a.attempt - 1, machine_.teardown_began().value_or(stopping_at_));
    timeline_.note(RestartPhase::GroupStopped, now_seconds());
    sweep();
    if (rdzv_ && machine_.stopped_by_round()) {
      spdlog::info("workers stopped; joining the next rendezvous round");
      next_attempt_ = a.attempt;
      rdzv_->join();
      return;
    }
    // The summary quotes each rank's last stderr lines: let the failed attempt's pipes drain
    // first (briefly, as at the end of the job), then report and restart.
    pending_restart_ = a;
    drain_timer_.expires_after(std::chrono::milliseconds(500));
    drain_timer_.async_wait([this](boost::system::error_code ec) {
      if (!ec) restart_after_drain();
    });
    maybe_restart_drained();
  }

  void maybe_restart_drained() {
    if (!pending_restart_ || !workers_.drained()) return;
    drain_timer_.cancel();
    restart_after_drain();
  }

  void restart_after_drain() {
    if (!pending_restart_) return;
    const auto a = *pending_restart_;
    pending_restart_.reset();
    out_.flush();
    const bool fresh_filestore = report_failures(false);
    out_.console.drain(std::chrono::seconds(2));  // the failure summary first, then the restart
    // Its cause is gone: no back-off (launcher/supervisor/filestore_watch.hpp).
    const auto backoff = fresh_filestore ? std::chrono::milliseconds(0) : a.after;
    // --min-restart-interval: attempts start at least that far apart.
    const auto since_start =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - attempt_started_);
    const auto after = restart_delay(backoff, config_.min_restart_interval, since_start);
    const auto& decision = machine_.restart_decision();
    const std::string budget = decision ? decision->text(machine_.budget_policy()) : std::string();
    if (fresh_filestore) {
      spdlog::warn(
          "attempt {} failed on a FileStore an earlier run left: {}; restarting the worker group as attempt "
          "{} at once (--max-restarts {})",
          a.attempt - 1, std::exchange(stale_removed_, {}), a.attempt, config_.max_restarts);
    } else {
      spdlog::warn("attempt {} failed; restarting the worker group as attempt {} (--max-restarts {}) in {} ms{}{}",
                   a.attempt - 1, a.attempt, config_.max_restarts, after.count(),
                   after > backoff ? " (--min-restart-interval)" : "", budget.empty() ? "" : "; " + budget);
    }
    events_.emit(restarting_event(a.attempt, decision, machine_.restarts_left(), after));
    // The health gate (launcher/supervisor/gpu_release_gate.hpp): the dead ranks' GPU memory first.
    gpu_gate_.wait(failed_attempt_pids(), [this, a, after](const GpuReleaseGate::Outcome& o) {
      if (o.gated) timeline_.note(RestartPhase::GpuReleased, now_seconds());
      if (o.gated && !o.released) {
        spdlog::warn(
            "the failed attempt's GPU memory is not free after {:.1f} s (--gpu-release-timeout): {}; "
            "restarting anyway",
            o.waited_s, fmt::join(o.held, "; "));
      } else if (o.gated && o.waited_s >= 0.05) {
        spdlog::info("the failed attempt's GPU memory was freed in {:.2f} s", o.waited_s);
      }
      const auto waited = std::chrono::milliseconds(static_cast<long long>(o.waited_s * 1000));
      restart_after_gate(a, after > waited ? after - waited : std::chrono::milliseconds(0));
    });
  }

  std::vector<unsigned> failed_attempt_pids() const {
    std::vector<unsigned> pids;
    for (const auto& r : plan_) {
      if (const Worker* w = workers_.of(r.local_rank)) pids.push_back(static_cast<unsigned>(w->pid));
    }
    return pids;
  }

  void restart_after_gate(const action::ArmBackoff& a, std::chrono::milliseconds after) {
    if (machine_.state() != GroupState::Restarting) return;  // a signal ended the job meanwhile
    if (rdzv_) {
      // Every restart goes through a new round: the others learn of it and restart too.
      next_attempt_ = a.attempt;
      rdzv_->join();
      return;
    }
    backoff_timer_.expires_after(after);
    backoff_timer_.async_wait([this, attempt = a.attempt](boost::system::error_code ec) {
      if (!ec) dispatch(input::BackoffExpired{attempt});
    });
  }

  void perform(const action::Finish& a) {
    exit_code_ = a.exit_code;
    end_timeline(machine_.attempt());
    if (const auto& d = machine_.restart_decision(); d && d->verdict != RestartVerdict::Restart) {
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

  void maybe_finish_drained() {
    if (!machine_.finished_with() || !workers_.drained()) return;
    drain_timer_.cancel();
  }

  // Tell the rendezvous (the host keeps its store up until every node finished).
  void perform(const action::JoinExitBarrier& a) {
    rdzv_->finish(a.exit_code == 0, fmt::format("its job ended with exit code {}", a.exit_code),
                  [this] { dispatch(input::ExitBarrierPassed{}); });
  }

  void perform(const action::Exit& a) {
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

  // Every worker's process group gets SIGKILL once its leader is gone: nothing it started survives;
  // cgroup.kill reaches what left the group (a double-forked daemon), where cgroups are writable.
  void sweep() {
    workers_.kill_all();
    cgroups_.kill_all();
  }

  void spawn(const RankAssignment& ranks, int attempt) {
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
    events_.emit(events::RankStarted{
        .attempt = attempt, .rank = ranks.rank, .local_rank = ranks.local_rank, .pid = child.pid()});
  }

  // The watch found ranks that never arrived: fail the attempt, naming them (its report).
  void on_rendezvous_timeout(int attempt, int world, const RendezvousEvidence& ev, const RendezvousJudgment& j) {
    spdlog::error("{}", j.report);
    events_.emit(events::RendezvousTimeout{
        .attempt = attempt, .arrived = ev.arrived, .world_size = world, .missing_local_ranks = j.missing});
    dispatch(input::RendezvousTimeout{attempt});
  }

  // The progress watchdog found a hang (launcher/hang/progress_watchdog.hpp): take the evidence first
  // (launcher/hang/hang_response.hpp: NCCL's flight recorder, every rank's stacks), then fail the
  // attempt, naming the rank that went silent first. The ranks' exits meanwhile are held back.
  void on_hang(const HangVerdict& v) {
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

  void on_hang_evidence(const HangVerdict& v, HangEvidence e) {
    const auto& file = e.stacks.stacks_file;
    events_.emit(hang_detected_event(v, file.empty() ? std::nullopt : std::optional(file.string())));
    if (!file.empty()) out_.keep(fmt::format("the hung attempt {}'s stacks: {}", v.attempt, file.string()));
    hang_evidence_ = std::move(e);
    dispatch(input::HangDetected{v.attempt});
    for (auto [w, x] : std::exchange(held_exits_, {})) on_reaped(*w, x);
  }

  // launcher/supervisor/failure_report.hpp. Read here, not at the reap: the final summary comes after the
  // workers' pipes drained, so a traceback still in flight at the exit is in last_stderr by now.
  // Returns true when a stale FileStore the ranks met on is gone now (removed here, or by torch):
  // the restart need not wait.
  bool report_failures(bool final) {
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

  // Before a restart a provably stale FileStore goes (the cleaner decides again, under its lock);
  // each found file becomes a filestore_found event, and the run record names it.
  bool settle_found_filestores(const std::vector<FoundFileStore>& found, bool final) {
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

  // This run's own processes, whose use of a FileStore is no one else's: the guardian (a fork of
  // this process, with its command line) and any worker not reaped yet.
  std::vector<pid_t> run_pids() const {
    std::vector<pid_t> pids{containment_.pid()};
    for (const auto& w : workers_.recorded()) pids.push_back(w.pid);
    return pids;
  }

  std::vector<pid_t> live_worker_pids() const {
    std::vector<pid_t> pids;
    for (const auto& r : plan_) {
      if (const Worker* w = workers_.of(r.local_rank); w && w->alive) pids.push_back(w->pid);
    }
    return pids;
  }

  // The torch elastic timer signalled a pid of this attempt: the rank's evidence, and the event.
  void on_timer_expired(const TimerExpiry& e, double sent_at) {
    if (e.signal > 0) workers_.record_timer_kill(e, sent_at);
    events_.emit(timer_expired_event(machine_.attempt(), e));
  }

  std::optional<LogOwner> log_owner(FileWriter::FileId id) const {
    auto it = log_owners_.find(id);
    return it == log_owners_.end() ? std::nullopt : std::optional(it->second);
  }

  // A file of the run cannot be written: said at once (one line, an event); the ranks run on.
  void on_write_failed(const FileWriter::Failure& f) {
    auto owner = log_owner(f.file);
    out_.console.write(stderr, write_failure_warning(f, owner));
    events_.emit(events::WriteFailed{.attempt = owner ? std::optional(owner->attempt) : std::nullopt,
                                     .rank = owner ? std::optional(owner->rank) : std::nullopt,
                                     .path = f.path.string(),
                                     .error = std::strerror(f.error)});
  }

  // The end: one line per file that lacks bytes, a cut stderr.log's last lines from memory.
  void report_output_losses() {
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

  // A torch elastic timer request of a rank: progress evidence for the hang watchdog.
  void on_timer_request(int rank) {
    for (const auto& r : plan_) {
      if (r.rank == rank) progress_.on_progress(r.local_rank);
    }
  }

  // GPU watch samples: into the event stream and metrics.csv (no step).
  void on_gpu_sample(const GpuSample& s) {
    events_.emit(gpu_sample_event(s));
    int attempt = machine_.attempt();
    out_.metrics.record({attempt, s.rank, std::nullopt, "gpu_util", static_cast<double>(s.sample.util_percent)});
    out_.metrics.record({attempt, s.rank, std::nullopt, "gpu_mem_used_mib", s.mem_used_mib()});
  }

  void on_gpu_low(const GpuSample& s, const LowUtilAlert& a, const std::string& text) {
    out_.console.write(stderr, fmt::format("[ddp-launch] warning: {}\n", text));
    events_.emit(gpu_low_util_event(s, a, text));
  }

  // A restarted attempt's rank was heard from: its interpreter is up; after the rendezvous (or a
  // step line at any time) that is its first progress, and the restart's timeline is complete.
  void on_attempt_heard_from(int attempt, bool after_rendezvous_only) {
    if (!timeline_.active() || timeline_.attempt() != attempt || attempt != machine_.attempt()) return;
    const double now = now_seconds();
    timeline_.note(RestartPhase::InterpreterReady, now);
    if (after_rendezvous_only && !timeline_.has(RestartPhase::StoreReached)) return;
    if (!timeline_.note(RestartPhase::FirstProgress, now)) return;
    spdlog::info("attempt {}: {}", attempt, timeline_.summary());
    end_timeline(attempt);
  }

  void end_timeline(int attempt) {
    if (timeline_.active() && timeline_.attempt() == attempt && timeline_.has(RestartPhase::SpawnBegan)) {
      events_.emit(timeline_.finish());
    }
  }

  // launcher/hang/straggler_detector.hpp: a rank the others wait for is reported, not stopped.
  void on_metric_row(const MetricRow& row) {
    if (row.step_given) on_attempt_heard_from(row.attempt, /*after_rendezvous_only=*/false);
    // A step the line named is the restart budget's progress (launcher/supervisor/restart_budget.hpp).
    if (row.step_given && row.attempt == machine_.attempt() &&
        (!machine_.progress().step || *row.step > *machine_.progress().step)) {
      machine_.on(input::ProgressSeen{row.attempt, {.checkpoint = {}, .step = row.step}});
    }
    if (!stragglers_) return;
    const double now = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    auto v = stragglers_->on_row(row, now);
    if (!v) return;
    out_.console.write(stderr,
                       fmt::format("[ddp-launch] warning: {}\n", straggler_warning(*v, stragglers_->threshold())));
    events_.emit(straggler_event(row.attempt, *v));
  }

  const SupervisorConfig& config_;
  std::vector<RankAssignment> plan_;
  SupervisorMachine machine_;
  WorkerCgroups cgroups_;
  platform::Containment containment_;  // before anything that may start a thread (the guardian forks)
  asio::io_context io_{1};
  platform::StopSignals signals_;
  platform::ChildExits exits_;
  asio::steady_timer grace_timer_;
  asio::steady_timer backoff_timer_;
  asio::steady_timer drain_timer_;
  std::optional<action::ArmBackoff> pending_restart_;  // waiting for the failed attempt's pipes to drain
  EventLog events_;
  RunRecord record_;
  FileStoreWatch filestores_;  // the FileStore only the workers' script names
  std::string stale_removed_;  // "removed the stale FileStore …", for the restart's line
  WorkerStore store_;
  RendezvousWatch rendezvous_watch_;
  RunOutputs out_;  // console, per-rank logs, filtered logs, metrics.csv: one writer thread
  std::map<FileWriter::FileId, LogOwner> log_owners_;  // the ranks' log files, for what a failure says
  LogRouter router_;
  ProgressWatch progress_;           // the hang watchdog (--hang-timeout)
  std::optional<HangVerdict> hang_;  // its last verdict, for the summary
  HangResponse hang_response_{io_};  // the evidence taken before the kill
  std::optional<HangEvidence> hang_evidence_;
  std::vector<std::pair<Worker*, RankExit>> held_exits_;  // reaped while the stacks were taken
  GpuWatch gpu_watch_;
  std::optional<StragglerWatch> stragglers_;
  std::uint16_t master_port_ = 0;
  WorkerGroup workers_{containment_, exits_};
  WarmStart warm_{config_, containment_, exits_};  // --warm-start
  std::optional<WorkerLaunch> first_launch_;       // local rank 0's, for the warm-start process
  // TORCHELASTIC_ENABLE_FILE_TIMER=1. on_request (a rank's request: progress) is for the progress watchdog.
  FileTimerServer file_timer_{io_,
                              file_timer_setup(config_.base_env, config_.run_dir.string()),
                              {.rank_of = [this](pid_t pid) { return workers_.rank_of_pid(pid); },
                               .expired = [this](const TimerExpiry& e, double at) { on_timer_expired(e, at); },
                               .on_request = [this](int rank) { on_timer_request(rank); }}};
  bool stopping_announced_ = false;
  double stopping_at_ = 0;    // when the current attempt's teardown was announced
  RestartTimeline timeline_;  // the restart under way, until its first progress
  GpuReleaseGate gpu_gate_{io_, config_.gpu_release_timeout, cuda_visible_devices(config_)};
  std::chrono::steady_clock::time_point attempt_started_ = std::chrono::steady_clock::now();
  // Dynamic rendezvous (--rdzv-backend c10d).
  std::unique_ptr<Rendezvous> rdzv_;
  int round_ = 0;
  int next_attempt_ = -1;  // the restart waiting for its round
  std::string rdzv_close_reason_;
  std::map<std::string, std::string> numeric_addrs_;  // ranks_master_addr's answers (before master_addr_)
  std::string master_addr_;
  std::string node_name_;
  int exit_code_ = 1;
};

}  // namespace

int run_supervisor(const SupervisorConfig& config) {
  platform::ignore_broken_pipes();
  Supervisor supervisor(config);
  return supervisor.run();
}

}  // namespace ddp::launcher
