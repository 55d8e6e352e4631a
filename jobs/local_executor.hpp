#pragma once
// The local executor: starts a job's `ddp-launch run` supervisor as a child in its own session
// (so it outlives a daemon crash and can be re-adopted), with its output in a file (never a pipe:
// a pipe would break when the daemon dies). Plus the /proc facts that re-adoption checks. The OS
// calls are platform/detached_process.hpp's and platform/proc.hpp's.
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jobs/executor.hpp"
#include "platform/detached_process.hpp"

namespace ddp::jobs {

// The supervisor's start (platform/detached_process.hpp: its own session, output appended to
// `output_file`); throws ddp::Error naming what failed.
pid_t spawn_supervisor(const platform::DetachedSpawn& request);

// The process's start time (platform/proc.hpp's read_proc_stat: Linux /proc/<pid>/stat's field 22,
// Windows its creation time), or nullopt if gone.
std::optional<std::uint64_t> process_start_time(pid_t pid);

// The live supervisor started with `--events <events_path>`, found among the processes
// (proc::process_texts): on Linux the session leader
// (spawn_supervisor's setsid; its forked guardian shares the command line, not the session) whose
// argv holds that pair. For a daemon killed between the spawn and recording the pid: exec has
// happened when posix_spawn returns, so the command line is there from the start, unlike the
// supervisor's processes.json (written once it runs). nullopt when none lives.
std::optional<RunHandle> find_supervisor(const std::filesystem::path& events_path);

// The Executor over the functions above: the supervisor's exit through a platform::ProcessWatch
// (a child's exit reaped), signals through it (a recycled pid never gets one). The
// supervisor's event stream is read by the JobManager; logs are run_logs.hpp's.
class LocalExecutor : public Executor {
 public:
  explicit LocalExecutor(boost::asio::io_context& io) : io_(io) {}
  const char* name() const override { return "local"; }
  bool uses_host_resources() const override { return true; }
  void start(const RunRequest& request, RunStarted started, RunStartFailed failed) override;
  void follow(JobId id, const RunHandle& run, bool own_child, RunUpdated updated) override;
  bool can_readopt(const RunHandle& run) override;
  std::optional<RunHandle> find_unrecorded(const std::filesystem::path& run_dir) const override;
  void stop(JobId id, const RunHandle& run, bool force) override;
  void forget(JobId id) override;
  std::optional<std::filesystem::path> log_path(const std::filesystem::path& run_dir, const RunHandle& run,
                                                const std::string& rank, const std::string& stream) const override;

 private:
  boost::asio::io_context& io_;
  std::map<JobId, std::unique_ptr<platform::ProcessWatch>> watches_;
};

}  // namespace ddp::jobs
