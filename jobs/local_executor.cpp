#include "jobs/local_executor.hpp"

#include <fmt/format.h>

#include <utility>

#include "common/error.hpp"
#include "jobs/run_logs.hpp"
#include "platform/proc.hpp"
#include "platform/signal_numbers.hpp"

namespace ddp::jobs {

pid_t spawn_supervisor(const platform::DetachedSpawn& request) {
  std::string why;
  pid_t pid = platform::spawn_detached(request, why);
  if (pid <= 0) {
    throw Error(fmt::format("cannot start the supervisor {} (workdir '{}'): {}", request.argv.at(0),
                            request.workdir.string(), why));
  }
  return pid;
}

std::optional<std::uint64_t> process_start_time(pid_t pid) {
  if (auto st = proc::read_proc_stat(pid)) return st->start_time;
  return std::nullopt;
}

std::optional<RunHandle> find_supervisor(const std::filesystem::path& events_path) {
  const std::string events = events_path.string();
  // Processes whose argv holds `--events <events_path>`: the supervisor and, on POSIX, its guardian
  // (forked from it, same argv, setsid()); the guardian is the one whose parent is a match too. On
  // POSIX the supervisor leads its session; Windows has no session to read (0).
  std::vector<std::pair<pid_t, proc::ProcStat>> matches;
  for (const auto& p : proc::process_texts()) {
    bool match = false;
    for (std::size_t i = 0; i + 1 < p.argv.size() && !match; ++i)
      match = p.argv[i] == "--events" && p.argv[i + 1] == events;
    if (!match) continue;
    auto st = proc::read_proc_stat(p.pid);
    if (st && (st->sid == p.pid || st->sid == 0)) matches.emplace_back(p.pid, *st);
  }
  for (const auto& [pid, st] : matches) {
    bool parent_matches = false;
    for (const auto& other : matches) parent_matches = parent_matches || other.first == st.ppid;
    if (!parent_matches) return RunHandle{pid, st.start_time, {}};
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// LocalExecutor

void LocalExecutor::start(const RunRequest& r, RunStarted started, RunStartFailed failed) {
  platform::DetachedSpawn req{launch_argv(*r.spec, r.ctx), launch_env(*r.spec, r.ctx), r.spec->workdir,
                              r.run_dir / "supervisor.log"};
  RunHandle run;
  try {
    run.pid = spawn_supervisor(req);
  } catch (const std::exception& e) {
    failed(e.what());
    return;
  }
  run.pid_start_time = process_start_time(run.pid).value_or(0);
  started(run);
}

void LocalExecutor::follow(JobId id, const RunHandle& run, bool own_child, RunUpdated updated) {
  auto ended = [pid = run.pid, own_child, updated] {
    RunUpdate u;
    u.phase = RunUpdate::Phase::Ended;
    if (own_child) {
      if (auto end = platform::reap_child(pid)) u.supervisor_exit = ExitStatus::of(end->exit_code, end->signal);
    }
    updated(u);
  };
  auto watch = std::make_unique<platform::ProcessWatch>(io_, run.pid);
  if (!watch->open()) {  // gone already (or not visible): its event file tells the rest
    ended();
    return;
  }
  watch->async_wait(ended);
  watches_[id] = std::move(watch);
}

bool LocalExecutor::can_readopt(const RunHandle& run) {
  auto start = process_start_time(run.pid);
  bool alive = start && run.pid_start_time != 0 && *start == run.pid_start_time;
  if (alive) {
    platform::ProcessWatch watch(io_, run.pid);
    // Checked again once it is watched: the pid cannot be recycled under an open watch.
    alive = watch.open() && process_start_time(run.pid) == run.pid_start_time;
  }
  return alive;
}

std::optional<RunHandle> LocalExecutor::find_unrecorded(const std::filesystem::path& run_dir) const {
  return find_supervisor(run_dir / "events.jsonl");
}

void LocalExecutor::stop(JobId id, const RunHandle& run, bool force) {
  // The supervisor handles SIGTERM like torchrun: SIGTERM to every rank, SIGKILL after its grace.
  const int signo = force ? sig::kKill : sig::kTerm;
  auto it = watches_.find(id);
  if (it != watches_.end() && it->second && it->second->open()) {
    it->second->signal(signo);
  } else if (run.pid > 0) {
    platform::signal_process(run.pid, signo);
  }
}

void LocalExecutor::forget(JobId id) {
  auto it = watches_.find(id);
  if (it == watches_.end()) return;
  it->second->close();
  watches_.erase(it);
}

std::optional<std::filesystem::path> LocalExecutor::log_path(const std::filesystem::path& run_dir, const RunHandle&,
                                                             const std::string& rank, const std::string& stream) const {
  return rank_log_path(run_dir, rank, stream);
}

}  // namespace ddp::jobs
