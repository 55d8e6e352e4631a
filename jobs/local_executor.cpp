#include "jobs/local_executor.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/error.hpp"
#include "platform/proc.hpp"
#include "jobs/run_logs.hpp"

extern char** environ;

namespace ddp::jobs {

pid_t spawn_supervisor(const SpawnRequest& request) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : request.env_overrides) env[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = request.argv;
  std::vector<char*> argv;
  for (auto& s : argv_copy) argv.push_back(s.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, request.output_file.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  // Nothing of the daemon leaks into the job: an inherited listening socket would keep answering
  // for a dead daemon, and its lock would block the next one.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (!request.workdir.empty()) posix_spawn_file_actions_addchdir_np(&actions, request.workdir.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  sigdelset(&defaults, SIGKILL);
  sigdelset(&defaults, SIGSTOP);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  // Its own session: signals meant for the daemon (a terminal's Ctrl-C) do not reach the job,
  // and it lives on when the daemon dies.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    throw Error(fmt::format("cannot start the supervisor {} (workdir '{}'): {}", request.argv[0],
                            request.workdir.string(), std::strerror(rc)));
  }
  return pid;
}

std::optional<std::uint64_t> process_start_time(pid_t pid) {
  if (auto st = proc::read_proc_stat(pid)) return st->start_time;
  return std::nullopt;
}

std::optional<RunHandle> find_supervisor(const std::filesystem::path& events_path) {
  const std::string events = events_path.string();
  // Session leaders whose argv holds `--events <events_path>`: the supervisor, and its guardian
  // (forked from it, same argv, setsid()); the guardian is the one whose parent is a match too.
  std::vector<std::pair<pid_t, proc::ProcStat>> matches;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const auto name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const auto pid = static_cast<pid_t>(std::stol(name));
    auto st = proc::read_proc_stat(pid);
    if (!st || st->sid != pid) continue;
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::vector<std::string> argv;
    for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
    bool match = false;
    for (std::size_t i = 0; i + 1 < argv.size() && !match; ++i) match = argv[i] == "--events" && argv[i + 1] == events;
    if (match) matches.emplace_back(pid, *st);
  }
  for (const auto& [pid, st] : matches) {
    bool parent_matches = false;
    for (const auto& other : matches) parent_matches = parent_matches || other.first == st.ppid;
    if (!parent_matches) return RunHandle{pid, st.start_time, {}};
  }
  return std::nullopt;
}

int open_pidfd(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

// ---------------------------------------------------------------------------------------------
// LocalExecutor

void LocalExecutor::start(const RunRequest& r, RunStarted started, RunStartFailed failed) {
  SpawnRequest req{launch_argv(*r.spec, r.ctx), launch_env(*r.spec, r.ctx), r.spec->workdir,
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
    int st = 0;
    if (own_child && ::waitpid(pid, &st, 0) == pid) u.wait_status = st;
    updated(u);
  };
  int fd = open_pidfd(run.pid);
  if (fd < 0) {  // gone already (or not visible): its event file tells the rest
    ended();
    return;
  }
  auto& pidfd = pidfds_[id];
  pidfd = std::make_unique<boost::asio::posix::stream_descriptor>(io_, fd);
  pidfd->async_wait(boost::asio::posix::stream_descriptor::wait_read, [ended](boost::system::error_code ec) {
    if (!ec) ended();
  });
}

bool LocalExecutor::can_readopt(const RunHandle& run) {
  auto start = process_start_time(run.pid);
  bool alive = start && run.pid_start_time != 0 && *start == run.pid_start_time;
  if (alive) {
    int fd = open_pidfd(run.pid);
    // Checked again after opening the pidfd: the pid cannot be recycled under an open pidfd.
    alive = fd >= 0 && process_start_time(run.pid) == run.pid_start_time;
    if (fd >= 0) ::close(fd);
  }
  return alive;
}

void LocalExecutor::stop(JobId id, const RunHandle& run, bool force) {
  // The supervisor handles SIGTERM like torchrun: SIGTERM to every rank, SIGKILL after its grace.
  const int signo = force ? SIGKILL : SIGTERM;
  auto it = pidfds_.find(id);
  if (it != pidfds_.end() && it->second && it->second->is_open()) {
    ::syscall(SYS_pidfd_send_signal, it->second->native_handle(), signo, nullptr, 0);
  } else if (run.pid > 0) {
    ::kill(run.pid, signo);
  }
}

void LocalExecutor::forget(JobId id) {
  auto it = pidfds_.find(id);
  if (it == pidfds_.end()) return;
  boost::system::error_code ec;
  it->second->close(ec);
  pidfds_.erase(it);
}

std::optional<std::filesystem::path> LocalExecutor::log_path(const std::filesystem::path& run_dir, const RunHandle&,
                                                             const std::string& rank, const std::string& stream) const {
  return rank_log_path(run_dir, rank, stream);
}

}  // namespace ddp::jobs
