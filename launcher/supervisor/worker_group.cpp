#include "launcher/supervisor/worker_group.hpp"

#include <spdlog/spdlog.h>

#include "common/signals.hpp"
#include "platform/proc.hpp"

namespace ddp::launcher {

void WorkerGroup::retire() {
  // An earlier attempt's worker whose streams have both ended has no read in flight and nothing
  // that refers to it: freed here, so a crash loop keeps at most the last attempts' workers instead
  // of every attempt's (128 KiB of read buffers per rank per restart: 7.7 -> 98 MB after 340).
  std::erase_if(retired_, [](const std::unique_ptr<Worker>& w) { return w->output.drained(); });
  for (auto& w : workers_) {
    w->output.stop_reading();
    retired_.push_back(std::move(w));
  }
  workers_.clear();
}

RankProcess WorkerGroup::start(std::unique_ptr<Worker> worker, const WorkerLaunch& launch,
                               std::vector<platform::NativeHandle> cgroup_procs, std::vector<int> cpu_affinity) {
  auto warm = warm_ ? warm_(worker->ranks.rank, launch, cgroup_procs, cpu_affinity) : std::nullopt;
  if (warm) {
    for (auto h : cgroup_procs) platform::close_handle(h);
  }
  auto process = warm ? std::move(*warm)
                      : spawn_rank(worker->ranks.rank, launch, std::move(cgroup_procs), std::move(cpu_affinity));
  worker->pid = process.pid();
  worker->alive = true;
  exits_.watch(process.child, worker->ranks.local_rank);
  containment_.watch(worker->pid);
  worker->child = std::move(process.child);
  workers_.push_back(std::move(worker));
  return process;
}

void WorkerGroup::exited(const platform::ChildExit& x, const std::function<void(Worker&, const RankExit&)>& on_exit) {
  Worker* w = of(x.tag);
  if (!w || w->pid != x.pid) return;  // an earlier attempt's
  w->alive = false;
  on_exit(*w, rank_exit(x));
}

void WorkerGroup::signal(int signo) {
  for (auto& w : workers_) {
    if (!w->alive || w->child.signal_group(signo) || said_undeliverable_) continue;
    said_undeliverable_ = true;
    spdlog::info(
        "{} could not be delivered to rank {}'s process group (Windows: no console shared with it, or "
        "Wine, which has no Ctrl-Break events); its workers are ended when the shutdown grace is over",
        sig::signal_name(signo), w->ranks.rank);
  }
}

void WorkerGroup::kill_all() {
  for (auto& w : workers_) {
    w->child.signal_group(sig::kKill);
    containment_.forget(w->pid);
  }
}

bool WorkerGroup::drained() const {
  for (const auto& w : workers_) {
    if (!w->output.drained()) return false;
  }
  return true;
}

void WorkerGroup::stop_reading() {
  for (auto& w : workers_) w->output.stop_reading();
}

// workers_ is in local rank order; the scan is for a group whose spawn was cut short.
Worker* WorkerGroup::of(int local_rank) const {
  auto i = static_cast<std::size_t>(local_rank);
  if (i < workers_.size() && workers_[i]->ranks.local_rank == local_rank) return workers_[i].get();
  for (const auto& w : workers_) {
    if (w->ranks.local_rank == local_rank) return w.get();
  }
  return nullptr;
}

std::vector<RecordedProcess> WorkerGroup::recorded() const {
  std::vector<RecordedProcess> out;
  for (const auto& w : workers_) {
    auto e = recorded_process(w->pid);
    e.rank = w->ranks.rank;
    e.local_rank = w->ranks.local_rank;
    out.push_back(e);
  }
  return out;
}

std::vector<WatchedRank> WorkerGroup::alive_ranks() const {
  std::vector<WatchedRank> out;
  for (const auto& w : workers_) {
    if (!w->alive) continue;
    out.push_back({w->ranks.rank, w->pid, false, {w->output.last_output.begin(), w->output.last_output.end()}});
  }
  return out;
}

// Read now, not at the reap: the final summary comes after the workers' pipes drained, so a
// traceback still in flight at the exit is in the last stderr lines by now.
std::optional<RankEvidence> WorkerGroup::evidence(int local_rank) const {
  const Worker* w = of(local_rank);
  if (!w) return std::nullopt;
  RankEvidence ev;
  ev.rank = w->ranks.rank;
  ev.group_rank = w->ranks.group_rank;
  read_error_file(w->error_file, ev);
  ev.last_stderr.assign(w->output.last_stderr.begin(), w->output.last_stderr.end());
  ev.oom = w->oom;
  ev.timer_kill = w->timer_kill;
  return ev;
}

std::optional<int> WorkerGroup::rank_of_pid(pid_t pid) const {
  std::map<pid_t, int> alive;
  for (const auto& w : workers_) {
    if (w->alive) alive.emplace(w->pid, w->ranks.rank);
  }
  return launcher::rank_of_pid(pid, alive, [](pid_t p) -> std::optional<pid_t> {
    auto st = proc::read_proc_stat(p);
    return st ? std::optional(st->ppid) : std::nullopt;
  });
}

void WorkerGroup::record_timer_kill(const TimerExpiry& e, double sent_at) {
  for (auto& w : workers_) {
    if (w->ranks.rank == e.rank)
      w->timer_kill = TimerKillEvidence{e.scope_id, e.expiration_time, e.signal, sent_at, e.pid};
  }
}

}  // namespace ddp::launcher
