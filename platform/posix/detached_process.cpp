// platform/detached_process.hpp on Linux: posix_spawn with POSIX_SPAWN_SETSID; pidfd_open(2) and
// pidfd_send_signal(2).
#include "platform/detached_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstring>

#include "platform/host.hpp"

namespace ddp::platform {

pid_t spawn_detached(const DetachedSpawn& request, std::string& error) {
  auto env = environment();
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
  // Nothing of ours leaks into the job: an inherited listening socket would keep answering for a
  // dead daemon, and its lock would block the next one.
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
  // Its own session: signals meant for us (a terminal's Ctrl-C) do not reach it, and it lives on
  // when we die.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = ::posix_spawn(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    error = std::strerror(rc);
    return 0;
  }
  return pid;
}

std::optional<ProcessEnd> reap_child(pid_t pid) {
  int st = 0;
  if (::waitpid(pid, &st, 0) != pid) return std::nullopt;
  if (WIFSIGNALED(st)) return ProcessEnd{0, WTERMSIG(st)};
  if (WIFEXITED(st)) return ProcessEnd{WEXITSTATUS(st), 0};
  return std::nullopt;
}

struct ProcessWatch::Impl {
  explicit Impl(boost::asio::io_context& io) : fd(io) {}
  boost::asio::posix::stream_descriptor fd;
};

ProcessWatch::ProcessWatch(boost::asio::io_context& io, pid_t pid) : impl_(std::make_unique<Impl>(io)) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) impl_->fd.assign(fd);
}

ProcessWatch::~ProcessWatch() { close(); }

bool ProcessWatch::open() const { return impl_->fd.is_open(); }

void ProcessWatch::async_wait(std::function<void()> on_exit) {
  impl_->fd.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                       [on_exit = std::move(on_exit)](boost::system::error_code ec) {
                         if (!ec) on_exit();
                       });
}

bool ProcessWatch::signal(int signo) {
  return open() && ::syscall(SYS_pidfd_send_signal, impl_->fd.native_handle(), signo, nullptr, 0) == 0;
}

void ProcessWatch::close() {
  boost::system::error_code ec;
  if (impl_ && impl_->fd.is_open()) impl_->fd.close(ec);
}

bool signal_process(pid_t pid, int signo) { return pid > 0 && ::kill(pid, signo) == 0; }

}  // namespace ddp::platform
