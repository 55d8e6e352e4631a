#pragma once
// The supervisor of one `run` (launcher/supervisor/supervisor.hpp's run_supervisor): its state and
// the units it wires together. Private to launcher/supervisor/: its members are defined in
// supervisor.cpp (start, the machine's actions, spawning, the end), supervisor_restart.cpp (the
// drain, the health gate and the restart timeline between two attempts) and supervisor_reports.cpp
// (what a failure, a hang, a lost file or a GPU sample makes it say).
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

namespace ddp::launcher {

// Each unit gets its narrow part of the config (its header says what that is): supervisor.cpp.
WorkerStoreConfig worker_store_config(const SupervisorConfig& c);
RunOutputsConfig run_outputs_config(const SupervisorConfig& c);
WarmStartConfig warm_start_config(const SupervisorConfig& c);

class Supervisor {
 public:
  explicit Supervisor(const SupervisorConfig& config);
  int run();

 private:
  // The ranks' MASTER_ADDR for the store host `name`: itself, or (numeric_master_addr) the address
  // it resolves to, looked up once per name. One that does not resolve is handed on as given, said once.
  std::string ranks_master_addr(const std::string& name);

  // A start that failed before any worker: the process record (no successor needs it) and a
  // temporary run directory go; a --log-dir/--run-dir directory stays, as after any failed run.
  void forget_startup();

  // launcher/outputs/run_record.hpp: this supervisor, its guardian and the current attempt's workers.
  void record_processes();

  // The FileStores this run's workers use: --store file's, and those their argv and environment name.
  std::vector<std::string> recorded_filestores() const;
  void sweep_predecessor();

  // The hang watchdog's evidence: any output of the current attempt (and its heartbeat
  // files, watched from each attempt's spawn).
  void watch_progress();
  bool multi_node() const { return config_.dynamic.has_value() || config_.plan.nnodes > 1; }

  // --rdzv-backend c10d: host the rendezvous store if we can bind the endpoint, else join it.
  void start_rendezvous();
  void on_round(const RoundAssignment& a);
  void on_round_ended(const std::string& reason);
  void on_rendezvous_closed(const std::string& reason, const std::optional<RestartDecision>& restart);
  // Join the next round, saying how this node's last attempt ended (the host charges the job's budget).
  void join_round();
  void prepare_store();

  // Our store's count of the workers' clients reached the world size: the rendezvous is complete.
  void on_store_arrivals(std::int64_t arrived);
  void arm_signals();
  void on_reaped(Worker& worker, const RankExit& x);
  void dispatch(const Input& e);
  void perform(const action::ResetStore&);
  void perform(const action::SpawnGroup& a);

  // A few ranks per turn of the event loop: a signal or a rank's failure meanwhile is acted on
  // between them, and stops the spawning (the machine learns which ranks never started).
  void spawn_from(int attempt, std::size_t next);
  void spawn_when_warm(int attempt, std::chrono::steady_clock::time_point since);
  void perform(const action::SignalGroup& a);
  void signal_live_workers(int signo);
  void announce_stopping(int signo);
  void perform(const action::ArmGrace& a);
  void perform(const action::ArmBackoff& a);
  void maybe_restart_drained();
  void restart_after_drain();
  std::vector<unsigned> failed_attempt_pids() const;
  void restart_after_gate(const action::ArmBackoff& a, std::chrono::milliseconds after);
  void perform(const action::Finish& a);
  void maybe_finish_drained();

  // Tell the rendezvous (the host keeps its store up until every node finished).
  void perform(const action::JoinExitBarrier& a);
  void perform(const action::Exit& a);

  // Every worker's process group gets SIGKILL once its leader is gone: nothing it started survives;
  // cgroup.kill reaches what left the group (a double-forked daemon), where cgroups are writable.
  void sweep();
  void spawn(const RankAssignment& ranks, int attempt);

  // The watch found ranks that never arrived: fail the attempt, naming them (its report).
  void on_rendezvous_timeout(int attempt, int world, const RendezvousEvidence& ev, const RendezvousJudgment& j);

  // The progress watchdog found a hang (launcher/hang/progress_watchdog.hpp): take the evidence first
  // (launcher/hang/hang_response.hpp: NCCL's flight recorder, every rank's stacks), then fail the
  // attempt, naming the rank that went silent first. The ranks' exits meanwhile are held back.
  void on_hang(const HangVerdict& v);
  void on_hang_evidence(const HangVerdict& v, HangEvidence e);

  // launcher/supervisor/failure_report.hpp. Read here, not at the reap: the final summary comes after the
  // workers' pipes drained, so a traceback still in flight at the exit is in last_stderr by now.
  // Returns true when a stale FileStore the ranks met on is gone now (removed here, or by torch):
  // the restart need not wait.
  bool report_failures(bool final);

  // Before a restart a provably stale FileStore goes (the cleaner decides again, under its lock);
  // each found file becomes a filestore_found event, and the run record names it.
  bool settle_found_filestores(const std::vector<FoundFileStore>& found, bool final);

  // This run's own processes, whose use of a FileStore is no one else's: the guardian (a fork of
  // this process, with its command line) and any worker not reaped yet.
  std::vector<pid_t> run_pids() const;
  std::vector<pid_t> live_worker_pids() const;

  // The torch elastic timer signalled a pid of this attempt: the rank's evidence, and the event.
  void on_timer_expired(const TimerExpiry& e, double sent_at);
  std::optional<LogOwner> log_owner(FileWriter::FileId id) const;

  // A file of the run cannot be written: said at once (one line, an event); the ranks run on.
  void on_write_failed(const FileWriter::Failure& f);

  // The end: one line per file that lacks bytes, a cut stderr.log's last lines from memory.
  void report_output_losses();

  // A torch elastic timer request of a rank: progress evidence for the hang watchdog.
  void on_timer_request(int rank);

  // GPU watch samples: into the event stream and metrics.csv (no step).
  void on_gpu_sample(const GpuSample& s);
  void on_gpu_low(const GpuSample& s, const LowUtilAlert& a, const std::string& text);

  // A restarted attempt's rank was heard from: its interpreter is up; after the rendezvous (or a
  // step line at any time) that is its first progress, and the restart's timeline is complete.
  void on_attempt_heard_from(int attempt, bool after_rendezvous_only);
  void end_timeline(int attempt);

  // launcher/hang/straggler_detector.hpp: a rank the others wait for is reported, not stopped.
  void on_metric_row(const MetricRow& row);

  const SupervisorConfig& config_;
  std::vector<RankAssignment> plan_;
  SupervisorMachine machine_;
  WorkerCgroups cgroups_;
  platform::Containment containment_;  // before anything that may start a thread (the guardian forks)
  boost::asio::io_context io_{1};
  platform::StopSignals signals_;
  platform::ChildExits exits_;
  boost::asio::steady_timer grace_timer_;
  boost::asio::steady_timer backoff_timer_;
  boost::asio::steady_timer drain_timer_;
  boost::asio::steady_timer warm_timer_{io_};  // spawn_when_warm's next look
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
  WarmStart warm_{warm_start_config(config_), containment_, exits_};  // --warm-start
  std::optional<WorkerLaunch> first_launch_;                          // local rank 0's, for the warm-start process
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

}  // namespace ddp::launcher
