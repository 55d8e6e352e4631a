#pragma once
// The local executor: starts a job's `ddp-launch run` supervisor as a child in its own session
// (so it outlives a daemon crash and can be re-adopted), with its output in a file (never a pipe:
// a pipe would break when the daemon dies). Plus the /proc facts that re-adoption checks.
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jobs/executor.hpp"

namespace ddp::jobs {

struct SpawnRequest {
  std::vector<std::string> argv;                     // argv[0] is an absolute path
  std::map<std::string, std::string> env_overrides;  // applied to the daemon's own environment
  std::filesystem::path workdir;                     // empty: the daemon's
  std::filesystem::path output_file;                 // stdout and stderr, appended
};

// posix_spawn with POSIX_SPAWN_SETSID; throws ddp::Error naming what failed.
pid_t spawn_supervisor(const SpawnRequest& request);

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or nullopt if gone.
std::optional<std::uint64_t> process_start_time(pid_t pid);

// The live supervisor started with `--events <events_path>`, found in /proc: the session leader
// (spawn_supervisor's setsid; its forked guardian shares the command line, not the session) whose
// argv holds that pair. For a daemon killed between the spawn and recording the pid: exec has
// happened when posix_spawn returns, so the command line is there from the start, unlike the
// supervisor's processes.json (written once it runs). nullopt when none lives.
std::optional<RunHandle> find_supervisor(const std::filesystem::path& events_path);

// pidfd_open(2): a descriptor that becomes readable when `pid` exits, child or not; -1 on error.
int open_pidfd(pid_t pid);

// The Executor over the functions above: the supervisor's exit through its pidfd (a child's
// wait status reaped), signals through the pidfd (a recycled pid never gets one). The
// supervisor's event stream is read by the JobManager; logs are run_logs.hpp's.
class LocalExecutor : public Executor {
 public:
  explicit LocalExecutor(boost::asio::io_context& io) : io_(io) {}
  const char* name() const override { return "local"; }
  bool uses_host_resources() const override { return true; }
  void start(const RunRequest& request, RunStarted started, RunStartFailed failed) override;
  void follow(JobId id, const RunHandle& run, bool own_child, RunUpdated updated) override;
  bool can_readopt(const RunHandle& run) override;
  void stop(JobId id, const RunHandle& run, bool force) override;
  void forget(JobId id) override;
  std::optional<std::filesystem::path> log_path(const std::filesystem::path& run_dir, const RunHandle& run,
                                                const std::string& rank, const std::string& stream) const override;

 private:
  boost::asio::io_context& io_;
  std::map<JobId, std::unique_ptr<boost::asio::posix::stream_descriptor>> pidfds_;
};

}  // namespace ddp::jobs
