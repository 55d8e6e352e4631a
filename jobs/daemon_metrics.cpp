#include "jobs/daemon_metrics.hpp"

#include <fmt/format.h>

#include "jobs/job_state.hpp"

namespace ddp::jobs {

namespace {

template <typename T>
void add_metric(std::string& out, const char* name, const char* type, const char* help, T value) {
  out += fmt::format("# HELP {0} {1}\n# TYPE {0} {2}\n{0} {3}\n", name, help, type, value);
}

}  // namespace

std::string prometheus_text(const JobCounts& c, std::uint64_t http_requests_total) {
  std::string out = "# HELP ddpd_jobs Jobs known to the daemon, by state.\n# TYPE ddpd_jobs gauge\n";
  for (std::size_t i = 0; i < c.by_state.size(); ++i) {
    out += fmt::format("ddpd_jobs{{state=\"{}\"}} {}\n", state_name(static_cast<JobState>(i)), c.by_state[i]);
  }
  add_metric(out, "ddpd_queue_length", "gauge", "Jobs waiting for slots or GPUs.", c.queue_length);
  add_metric(out, "ddpd_slots_total", "gauge", "CPU slots of the host.", c.slots_total);
  add_metric(out, "ddpd_slots_in_use", "gauge", "CPU slots held by jobs.", c.slots_in_use);
  add_metric(out, "ddpd_gpus_total", "gauge", "GPUs of the host.", c.gpus_total);
  add_metric(out, "ddpd_gpus_in_use", "gauge", "GPUs held by jobs.", c.gpus_in_use);
  add_metric(out, "ddpd_job_restarts_total", "counter", "Worker-group restarts and daemon retries, all jobs.",
             c.restarts_total);
  add_metric(out, "ddpd_jobs_submitted_total", "counter", "Jobs submitted.", c.submitted_total);
  add_metric(out, "ddpd_http_requests_total", "counter", "HTTP requests served.", http_requests_total);
  out +=
      "# HELP ddpd_job_straggler_ratio A straggling rank's step rate over the median rate of its job's ranks "
      "(latest verdict; jobs not over).\n# TYPE ddpd_job_straggler_ratio gauge\n";
  for (const auto& s : c.stragglers) {
    out += fmt::format("ddpd_job_straggler_ratio{{job=\"{}\",rank=\"{}\"}} {:.4g}\n", s.job, s.rank, s.ratio);
  }
  return out;
}

}  // namespace ddp::jobs
