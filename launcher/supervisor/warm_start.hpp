#pragma once
// Warm starts (--warm-start, issue 28): a restart's Python ranks are forked from a per-node process
// that already holds the interpreter, torch and the modules the ranks imported before, instead of
// each paying a new interpreter and `import torch` again.
//
// The warm-start process (warm_start.py, embedded at build time) is started after the first
// attempt's ranks of a job that can restart (--max-restarts > 0, or c10d rounds), with local rank
// 0's environment and the same `python -u`. It imports torch, then, while
// idle, the installed packages the ranks use (their /proc/PID/maps; the top-level modules a
// warm-started local rank 0 appends to <run_dir>/warm_modules.txt), each only if it comes from the
// installation (never the script's own modules). Before any fork it holds one thread and no CUDA;
// a module that breaks that ends it (the next attempts start cold).
//
// Per rank, the supervisor sends a request (argv, the whole environment, CPUs; the rank's stdout
// and stderr pipes and cgroup.procs files attached, SCM_RIGHTS). The process forks twice; the
// middle one exits at once, so the rank is re-parented to the supervisor (adopt_orphans while it
// asks: PR_SET_CHILD_SUBREAPER): the supervisor reaps it and sees its real pid and exit status, as
// for a cold rank. The rank then waits to be ours, joins its cgroups, makes its own session
// (setsid: the stop path signals its group), dies with the supervisor (PR_SET_PDEATHSIG), takes its
// pipes, /dev/null as stdin, an empty signal mask, the rank's environment exactly, and runs the
// script as `python -u script …` or `-m module …` would: __main__, sys.argv, __file__, sys.path[0].
//
// Any failure (no channel, the process died or answered late, a refused request) starts the rank
// cold and every later one too, said once.
#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "launcher/supervisor/spawner.hpp"
#include "platform/child_exits.hpp"
#include "platform/containment.hpp"

namespace ddp::launcher {

// The embedded warm_start.py (generated from it by CMake).
extern const char* const kWarmStartPy;

// Whether `argv` is one a warm start can run: [python, -u, SCRIPT, ...] or [python, -u, -m, MODULE, ...].
bool warm_startable(const std::vector<std::string>& argv);

// What warm starts need of the run's config (supervisor_run.hpp's warm_start_config).
struct WarmStartConfig {
  bool enabled = false;                  // --warm-start
  std::vector<std::string> worker_argv;  // warm_startable() or never started
  bool can_restart = false;              // --max-restarts > 0 or c10d rounds: otherwise never started
  std::filesystem::path run_dir;         // warm_modules.txt
};

class WarmStart {
 public:
  static constexpr int kTag = -1;  // its process' exit, in ChildExits

  WarmStart(WarmStartConfig config, platform::Containment& containment, platform::ChildExits& exits);
  ~WarmStart();
  WarmStart(const WarmStart&) = delete;
  WarmStart& operator=(const WarmStart&) = delete;

  // An attempt's ranks were started, `first` (local rank 0's launch) with pid `first_pid`: the
  // warm-start process is started if there is none yet, and learns what that rank imports.
  void after_spawn(const WorkerLaunch& first, pid_t first_pid);
  // Before an attempt's ranks, without blocking: true once they can be forked warm, or when they
  // start cold anyway (no warm start, or it gave up); false while the process is still importing
  // torch (the supervisor asks again on its loop's next turns).
  bool settled();
  // The supervisor waited `waited` for the first imports: the ranks start cold from now on, said once.
  void stop_waiting(std::chrono::milliseconds waited);
  // The rank forked warm, or nullopt: start it cold (and every later one; said once).
  std::optional<RankProcess> spawn(int rank, const WorkerLaunch& launch,
                                   const std::vector<platform::NativeHandle>& cgroup_procs,
                                   const std::vector<int>& cpu_affinity);
  void exited(const platform::ChildExit& x);  // its process ended
  void stop();                                // the job is over
  bool running() const { return child_.pid() > 0; }

 private:
  void start(const WorkerLaunch& first);
  void give_up(const std::string& why);
  bool take_ready(std::chrono::milliseconds timeout);

  const WarmStartConfig config_;
  platform::Containment& containment_;
  platform::ChildExits& exits_;
  bool enabled_;
  bool ready_ = false;
  bool stopping_ = false;
  Child child_;
  platform::NativeHandle channel_ = platform::kNoHandle;
};

}  // namespace ddp::launcher
