#pragma once
// SlurmExecutor (executor: slurm): a run is a Slurm batch job. The script is the launcher's
// `ddp-launch sbatch` script (one `ddp-launch run` per node under srun, topology from SLURM_*),
// written to the run directory and submitted with `sbatch --parsable`; the job is followed with
// `scontrol -o show job ID` every poll interval, stopped with `scancel`, and its one output file
// (run_dir/slurm-<id>.out: every node's supervisor and ranks, through srun) is the job's log.
// Slurm allocates the nodes and GPUs: nothing of this host is booked.
//
// The Slurm client commands run on a helper thread (each with a deadline), so a slow or absent
// slurmctld never stalls the daemon's loop; their results come back to the loop.
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "jobs/executor.hpp"
#include "jobs/slurm_update.hpp"
#include "slurm/slurm_job.hpp"

namespace ddp::jobs {

struct SlurmExecutorConfig {
  std::chrono::milliseconds poll_interval{2000};     // scontrol -o show job, per followed job
  std::chrono::milliseconds command_timeout{30000};  // sbatch, scontrol, scancel each
};

class SlurmExecutor : public Executor {
 public:
  SlurmExecutor(boost::asio::io_context& io, SlurmExecutorConfig config);
  ~SlurmExecutor() override;
  const char* name() const override { return "slurm"; }
  bool uses_host_resources() const override { return false; }
  void start(const RunRequest& request, RunStarted started, RunStartFailed failed) override;
  void follow(JobId id, const RunHandle& run, bool own_child, RunUpdated updated) override;
  bool can_readopt(const RunHandle& run) override { return !run.external_id.empty(); }
  void stop(JobId id, const RunHandle& run, bool force) override;
  void forget(JobId id) override;
  std::optional<std::filesystem::path> log_path(const std::filesystem::path& run_dir, const RunHandle& run,
                                                const std::string& rank, const std::string& stream) const override;

 private:
  struct Followed;
  void poll(JobId id);
  void poll_after(JobId id, std::chrono::milliseconds delay);  // rearms the job's timer
  void on_query(JobId id, std::uint64_t serial, std::optional<slurm::SlurmJobInfo> job, std::string error);

  boost::asio::io_context& io_;
  SlurmExecutorConfig config_;
  std::map<JobId, std::unique_ptr<Followed>> followed_;
  std::uint64_t next_serial_ = 1;  // tells a followed job apart from an earlier one of the same id
  boost::asio::thread_pool pool_{1};
};

}  // namespace ddp::jobs
