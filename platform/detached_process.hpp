#pragma once
// A process the job daemon starts to outlive it (a job's `ddp-launch run` supervisor), and any
// process it follows by pid, its own child or one a previous daemon started.
//
// POSIX (Linux): posix_spawn in a session of its own (signals meant for the daemon do not reach it,
// and it lives on when the daemon dies), no descriptor of ours above stderr; followed through a
// pidfd (readable when it exits, child or not; a recycled pid never gets its signals).
// Windows: spawn.hpp's spawn_process, in a Job Object that does not end with us (no
// KILL_ON_JOB_CLOSE), a new process group and a hidden console of its own (closing ours does not
// reach it), output appended to the file; followed through a process handle (which keeps its pid
// from being reused); SIGTERM is stop_signals.hpp's request_stop (a named event the supervisor
// waits on), SIGKILL TerminateProcess (its ranks' KILL_ON_JOB_CLOSE jobs end with it).
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "platform/pid.hpp"

namespace ddp::platform {

struct DetachedSpawn {
  std::vector<std::string> argv;                     // argv[0] is an absolute path
  std::map<std::string, std::string> env_overrides;  // applied to our own environment
  std::filesystem::path workdir;                     // empty: ours
  std::filesystem::path output_file;                 // stdout and stderr, appended (created 0600)
};

// Its pid, or 0 with `error` saying why it could not be started.
pid_t spawn_detached(const DetachedSpawn& request, std::string& error);

// How a child of ours ended: the signal that killed it, else its exit code.
struct ProcessEnd {
  int exit_code = 0;
  int signal = 0;
};

// Waits for our child `pid` to end and reaps it (POSIX waitpid; Windows: its exit code from the
// handle spawn_detached kept, our TerminateProcess told as SIGKILL); nullopt when it is not our child.
std::optional<ProcessEnd> reap_child(pid_t pid);

// A live process as something the loop can wait on, whose pid cannot be recycled while it is open.
class ProcessWatch {
 public:
  // Not open() when the process is gone already (or cannot be followed on this OS).
  ProcessWatch(boost::asio::io_context& io, pid_t pid);
  ~ProcessWatch();
  ProcessWatch(const ProcessWatch&) = delete;
  ProcessWatch& operator=(const ProcessWatch&) = delete;

  bool open() const;
  // on_exit runs on the loop once the process has ended (not when the watch is closed first).
  void async_wait(std::function<void()> on_exit);
  // Sends signal `signo` (platform/signal_numbers.hpp) to the process itself; false when it cannot.
  bool signal(int signo);
  void close();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Sends `signo` to `pid` without a watch (a pid that was never followed); false when it cannot.
bool signal_process(pid_t pid, int signo);

}  // namespace ddp::platform
