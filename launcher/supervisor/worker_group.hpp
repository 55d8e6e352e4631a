#pragma once
// WorkerGroup: the current attempt's workers (torchelastic's WorkerGroup): their processes
// (launcher/supervisor/spawner.hpp; contained by platform/containment.hpp, their exits from
// platform/child_exits.hpp), their routed output (launcher/outputs/log_router.hpp) and what the supervisor
// reads back from them (the run record's entries, the watchdog's ranks, the summary's evidence).
// Earlier attempts' workers are kept until both their streams have ended: a dead rank's children
// (DataLoader workers…) may still hold its pipes when the group restarts, and the aborted reads
// complete on live objects; each new attempt frees the retired workers that have ended.
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/hang/file_timer.hpp"
#include "launcher/outputs/log_router.hpp"
#include "launcher/outputs/run_record.hpp"
#include "launcher/rendezvous/rendezvous_watchdog.hpp"
#include "launcher/supervisor/failure_report.hpp"
#include "launcher/supervisor/spawner.hpp"
#include "launcher/workers/rank_plan.hpp"
#include "platform/child_exits.hpp"
#include "platform/containment.hpp"

namespace ddp::launcher {

struct Worker {
  explicit Worker(boost::asio::io_context& io) : output(io) {}
  RankAssignment ranks;
  Child child;  // its process (and, on Windows, its Job Object: ended when this is gone)
  pid_t pid = 0;
  bool alive = false;
  RankOutput output;  // routed by LogRouter; its last lines for the summary and the watchdog
  std::filesystem::path error_file;
  std::optional<std::string> oom;               // SIGKILLed by the OOM killer: the evidence
  std::optional<TimerKillEvidence> timer_kill;  // the torch elastic timer signalled it (or its child)
};

class WorkerGroup {
 public:
  WorkerGroup(platform::Containment& containment, platform::ChildExits& exits)
      : containment_(containment), exits_(exits) {}

  // Ranks come from here first when it is set (launcher/supervisor/warm_start.hpp); nullopt: spawn_rank.
  using WarmSpawner = std::function<std::optional<RankProcess>(int rank, const WorkerLaunch&,
                                                               const std::vector<platform::NativeHandle>& cgroup_procs,
                                                               const std::vector<int>& cpu_affinity)>;
  void warm_from(WarmSpawner spawner) { warm_ = std::move(spawner); }

  // A new attempt: the current workers retire, their pipes closed.
  void retire();
  // Starts the worker's process (spawn_rank: throws Error when it cannot); the containment watches
  // its group, the exits its pid. Returns its pipes' read ends, for the LogRouter.
  RankProcess start(std::unique_ptr<Worker> worker, const WorkerLaunch& launch,
                    std::vector<platform::NativeHandle> cgroup_procs, std::vector<int> cpu_affinity);

  // A watched child exited: the current attempt's worker is marked dead, then handed to on_exit.
  void exited(const platform::ChildExit& x, const std::function<void(Worker&, const RankExit&)>& on_exit);
  // `signo` to every live worker's group (Windows: SIGTERM is Ctrl-Break; where it cannot be
  // delivered, one log line says the grace ends in a kill).
  void signal(int signo);
  // SIGKILL to every worker's group (its leader is gone: nothing it started survives).
  void kill_all();
  bool drained() const;  // every stream reached its end
  void stop_reading();

  Worker* of(int local_rank) const;
  std::size_t size() const { return workers_.size(); }
  std::size_t retired() const { return retired_.size(); }      // earlier attempts' workers still held
  std::vector<RecordedProcess> recorded() const;               // for processes.json
  std::vector<WatchedRank> alive_ranks() const;                // for the rendezvous watchdog
  std::optional<RankEvidence> evidence(int local_rank) const;  // for the failure summary
  // The torch elastic timer (launcher/hang/file_timer_server.hpp): the global rank of the live worker
  // `pid` is or descends from (/proc's parents), and the evidence of its signal.
  std::optional<int> rank_of_pid(pid_t pid) const;
  void record_timer_kill(const TimerExpiry& e, double sent_at);

 private:
  platform::Containment& containment_;
  platform::ChildExits& exits_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::unique_ptr<Worker>> retired_;  // earlier attempts'
  bool said_undeliverable_ = false;               // signal() could not reach a group: said once
  WarmSpawner warm_;
};

}  // namespace ddp::launcher
