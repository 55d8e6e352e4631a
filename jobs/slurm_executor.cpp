#include "jobs/slurm_executor.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <fstream>

#include "common/error.hpp"
#include "slurm/sbatch_script.hpp"

namespace ddp::jobs {

namespace asio = boost::asio;
namespace fs = std::filesystem;

struct SlurmExecutor::Followed {
  std::uint64_t serial = 0;
  std::string slurm_id;
  RunUpdated updated;
  std::unique_ptr<asio::steady_timer> timer;
  std::string last_reason;  // an update only when the state (or its reason) changed
  std::string last_error;   // a failing scontrol is logged once per distinct error
};

SlurmExecutor::SlurmExecutor(asio::io_context& io, SlurmExecutorConfig config) : io_(io), config_(config) {}

SlurmExecutor::~SlurmExecutor() {
  for (auto& [id, f] : followed_) f->timer->cancel();
  pool_.join();  // an sbatch/scontrol in flight ends within its deadline
}

void SlurmExecutor::start(const RunRequest& r, RunStarted started, RunStartFailed failed) {
  std::string script_path = (r.run_dir / "job.sbatch").string();
  try {
    auto script = slurm_batch_script(*r.spec, r.ctx, (r.run_dir / "slurm-%j.out").string());
    std::ofstream(script_path, std::ios::trunc) << slurm::render_sbatch_script(script);
    std::error_code ec;
    fs::permissions(script_path,
                    fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                        fs::perms::others_exec,
                    fs::perm_options::replace, ec);
  } catch (const std::exception& e) {
    failed(fmt::format("cannot write the sbatch script {}: {}", script_path, e.what()));
    return;
  }
  asio::post(pool_, [this, script_path, started, failed, timeout = config_.command_timeout] {
    std::string id, error;
    try {
      id = slurm::submit_batch_script(script_path, timeout);
    } catch (const std::exception& e) {
      error = e.what();
    }
    asio::post(io_, [id, error, started, failed, output = fs::path(script_path).parent_path()] {
      if (!error.empty()) return failed(error);
      // The output file exists from now on (Slurm writes into it, same inode): a `logs -f` that
      // starts before the job runs finds it and is woken by its writes.
      std::ofstream(output / fmt::format("slurm-{}.out", id), std::ios::app).flush();
      RunHandle run;
      run.external_id = id;
      started(run);
    });
  });
}

void SlurmExecutor::follow(JobId id, const RunHandle& run, bool, RunUpdated updated) {
  auto f = std::make_unique<Followed>();
  f->serial = next_serial_++;
  f->slurm_id = run.external_id;
  f->updated = std::move(updated);
  f->timer = std::make_unique<asio::steady_timer>(io_);
  followed_[id] = std::move(f);
  poll(id);
}

void SlurmExecutor::poll(JobId id) {
  auto it = followed_.find(id);
  if (it == followed_.end()) return;
  asio::post(pool_, [this, id, serial = it->second->serial, slurm_id = it->second->slurm_id,
                     timeout = config_.command_timeout] {
    std::optional<slurm::SlurmJobInfo> job;
    std::string error;
    try {
      job = slurm::query_job(slurm_id, timeout);
      if (!job) error = "purged";
    } catch (const std::exception& e) {
      error = e.what();
    }
    asio::post(io_, [this, id, serial, job, error] { on_query(id, serial, job, error); });
  });
}

void SlurmExecutor::on_query(JobId id, std::uint64_t serial, std::optional<slurm::SlurmJobInfo> job,
                             std::string error) {
  auto it = followed_.find(id);
  if (it == followed_.end() || it->second->serial != serial) return;  // forgotten meanwhile
  auto& f = *it->second;
  auto again = [this, id] { poll_after(id, config_.poll_interval); };
  if (!job && error != "purged") {
    // slurmctld down or slow: the job is not lost; keep asking.
    if (error != f.last_error) spdlog::warn("job {}: cannot query Slurm job {}: {}", id, f.slurm_id, error);
    f.last_error = error;
    return again();
  }
  f.last_error.clear();
  RunUpdate u;
  if (!job) {
    u.phase = RunUpdate::Phase::Ended;
    u.exit_code = 1;
    u.reason = fmt::format(
        "Slurm no longer knows job {} (purged after the cluster's MinJobAge before its end was seen); its outcome is "
        "unknown, its output stays in the run directory",
        f.slurm_id);
  } else {
    u = run_update_of(*job);
  }
  const bool ended = u.phase == RunUpdate::Phase::Ended;
  if (!ended) again();
  if (u.reason == f.last_reason && !ended) return;
  f.last_reason = u.reason;
  auto updated = f.updated;  // forget() (from the callback) destroys f
  if (ended) followed_.erase(it);
  updated(u);
}

void SlurmExecutor::stop(JobId id, const RunHandle& run, bool force) {
  if (run.external_id.empty()) return;
  asio::post(pool_, [this, id, slurm_id = run.external_id, force, timeout = config_.command_timeout] {
    std::string error;
    try {
      slurm::cancel_job(slurm_id, timeout);
    } catch (const std::exception& e) {
      error = e.what();
    }
    asio::post(io_, [id, slurm_id, force, error] {
      if (error.empty()) {
        spdlog::info("job {}: scancel {}{} done; following it to its end", id, slurm_id, force ? " (again)" : "");
      } else {
        spdlog::error("job {}: scancel {} failed: {}", id, slurm_id, error);
      }
    });
  });
  // Poll soon: the CANCELLED state shows without waiting a whole interval.
  poll_after(id, std::chrono::milliseconds(300));
}

void SlurmExecutor::poll_after(JobId id, std::chrono::milliseconds delay) {
  auto it = followed_.find(id);
  if (it == followed_.end()) return;
  it->second->timer->expires_after(delay);
  it->second->timer->async_wait([this, id](boost::system::error_code ec) {
    if (!ec) poll(id);
  });
}

void SlurmExecutor::forget(JobId id) {
  auto it = followed_.find(id);
  if (it == followed_.end()) return;
  it->second->timer->cancel();
  followed_.erase(it);
}

std::optional<fs::path> SlurmExecutor::log_path(const fs::path& run_dir, const RunHandle& run, const std::string&,
                                                const std::string&) const {
  // One file per run, whatever the rank or stream: every node's supervisor and ranks write to
  // it through srun (ranks' lines carry their [rank N]: prefix). The id is forgotten at the end
  // of a run; the file is the run directory's only slurm-*.out.
  if (!run.external_id.empty()) {
    auto p = run_dir / fmt::format("slurm-{}.out", run.external_id);
    if (fs::exists(p)) return p;
    return std::nullopt;
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir, ec)) {
    auto name = e.path().filename().string();
    if (name.rfind("slurm-", 0) == 0 && name.size() > 10 && name.substr(name.size() - 4) == ".out") return e.path();
  }
  return std::nullopt;
}

}  // namespace ddp::jobs
