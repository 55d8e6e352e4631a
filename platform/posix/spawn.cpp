#include "platform/spawn.hpp"
#include "platform/child_wait.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <memory>

namespace ddp {

struct Child::Native {};  // a pid is all POSIX needs

bool Child::signal_group(int signo) const { return pid_ > 1 && ::kill(-pid_, signo) == 0; }

namespace {

struct ChildContext {
  const SpawnRequest* request;
  char* const* argv;
  char* const* envp;
  pid_t parent;
  // Written by the child before it gives up (shared memory until the exec).
  int error;
  const char* what;
};

[[noreturn]] void fail(ChildContext& c, const char* what) {
  c.error = errno;
  c.what = what;
  ::_exit(127);
}

// The child, on its own small stack in the parent's memory: system calls only, no allocation.
int child_main(void* arg) {
  auto& c = *static_cast<ChildContext*>(arg);
  const auto& r = *c.request;
  for (int s = 1; s < NSIG; ++s) {
    struct sigaction sa {};
    // Caught signals (exec would reset them anyway) and SIGPIPE, which the parent ignores and
    // workers expect at its default; other ignored ones stay ignored across the exec, as with fork.
    if (::sigaction(s, nullptr, &sa) == 0 && sa.sa_handler != SIG_DFL && (sa.sa_handler != SIG_IGN || s == SIGPIPE)) {
      sa.sa_handler = SIG_DFL;
      sa.sa_flags = 0;
      ::sigaction(s, &sa, nullptr);
    }
  }
  if (!r.workdir.empty() && ::chdir(r.workdir.c_str()) != 0) fail(c, "chdir");
  if (!r.cpu_affinity.empty()) {
    cpu_set_t cpus;  // on this stack: no allocation in the child
    CPU_ZERO(&cpus);
    for (int cpu : r.cpu_affinity) {
      if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &cpus);
    }
    if (::sched_setaffinity(0, sizeof cpus, &cpus) != 0) fail(c, "sched_setaffinity");
  }
  for (int fd : r.cgroup_procs) [[maybe_unused]] auto n = ::write(fd, "0", 1);  // before anything it starts
  if (r.new_session && ::setsid() < 0) fail(c, "setsid");
  if (r.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != c.parent) ::_exit(127);  // the parent died before the signal was armed
  }
  const int null = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null < 0 || ::dup2(null, STDIN_FILENO) < 0) fail(c, "open /dev/null as stdin");
  if (r.stdout_fd >= 0 && ::dup2(r.stdout_fd, STDOUT_FILENO) < 0) fail(c, "dup2 stdout");
  if (r.stderr_fd >= 0 && ::dup2(r.stderr_fd, STDERR_FILENO) < 0) fail(c, "dup2 stderr");
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execve(r.program.c_str(), c.argv, c.envp);
  fail(c, "execve");
}

std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

SpawnResult spawn_process(const SpawnRequest& request) {
  auto argv = pointers(request.argv);
  auto envp = pointers(request.env);
  ChildContext c{&request, argv.data(), envp.data(), ::getpid(), 0, nullptr};
  // No handler of ours may run in the child (it would run in our memory): every signal is blocked
  // from before the clone until the child has reset them, and in this thread until it is back.
  sigset_t all, saved;
  sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &saved);
  constexpr std::size_t kStack = 64 * 1024;
  auto stack = std::make_unique<char[]>(kStack);
  // CLONE_VFORK: we resume when the child has exec'd or exited; its stack is free again by then.
  const pid_t pid = ::clone(child_main, stack.get() + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
  const int clone_errno = errno;
  std::atomic_signal_fence(std::memory_order_seq_cst);  // c was written by the child
  ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  SpawnResult result;
  if (pid < 0) {
    result.error = std::strerror(clone_errno);
    result.what = "clone";
    return result;
  }
  if (c.what) {  // it never got to run the program: reap it
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    result.error = std::strerror(c.error);
    result.what = c.what;
    return result;
  }
  result.child = Child(pid, nullptr);
  return result;
}

namespace platform {

bool reap_child(const Child& child, bool wait) {
  if (!child) return true;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(child.pid(), &status, wait ? 0 : WNOHANG);
    if (r == child.pid()) return true;
    if (r < 0 && errno == EINTR) continue;
    return r < 0;  // ECHILD: reaped already
  }
}

}  // namespace platform

}  // namespace ddp
