#pragma once
// JobDaemon: the daemon's real shells, made once and handed to its JobManager (job_manager.hpp):
// the job database in the state directory, the file watch, the local and Slurm executors, the
// system clock. Declared in the order they are made; the manager goes first when it ends.
#include <boost/asio/io_context.hpp>

#include "jobs/job_clock.hpp"
#include "jobs/job_db.hpp"
#include "jobs/job_manager.hpp"
#include "jobs/local_executor.hpp"
#include "jobs/slurm_executor.hpp"
#include "platform/file_watch.hpp"

namespace ddp::jobs {

struct JobDaemon {
  JobDaemon(boost::asio::io_context& io, const DaemonConfig& config)
      : db(config.state_dir / "jobs.db"),
        files(io),
        local(io),
        slurm(io, SlurmExecutorConfig{config.slurm_poll_interval}),
        jobs(io, config, JobShells{db, local, slurm, files, clock}) {}

  JobDb db;
  platform::FileWatch files;
  LocalExecutor local;
  SlurmExecutor slurm;
  SystemClock clock;
  JobManager jobs;
};

}  // namespace ddp::jobs
