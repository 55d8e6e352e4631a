#include "slurm/slurm_job.hpp"

#include <fmt/format.h>

#include <charconv>

#include "common/error.hpp"

namespace ddp::slurm {

SlurmJobInfo parse_scontrol_job(std::string_view line) {
  SlurmJobInfo job;
  std::string* last = nullptr;
  std::string ignored;
  std::size_t pos = 0;
  while (pos < line.size()) {
    auto start = line.find_first_not_of(" \t\r\n", pos);
    if (start == std::string_view::npos) break;
    auto end = line.find_first_of(" \t\r\n", start);
    auto word = line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    pos = end == std::string_view::npos ? line.size() : end;
    auto eq = word.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      if (last) *last += fmt::format(" {}", word);
      continue;
    }
    auto key = word.substr(0, eq);
    auto value = std::string(word.substr(eq + 1));
    last = key == "JobId"      ? &job.job_id
           : key == "JobName"  ? &job.name
           : key == "JobState" ? &job.state
           : key == "Reason"   ? &job.reason
           : key == "ExitCode" ? &job.exit_code
           : key == "NodeList" ? &job.node_list
           : key == "StdOut"   ? &job.std_out
           : key == "StdErr"   ? &job.std_err
                               : &ignored;
    *last = value;
  }
  if (job.job_id.empty()) throw Error(fmt::format("no JobId in scontrol output: '{}'", line));
  return job;
}

JobPhase phase_of(std::string_view state) {
  if (state == "RUNNING" || state == "COMPLETING" || state == "CONFIGURING" || state == "STAGE_OUT" ||
      state == "SIGNALING" || state == "RESIZING") {
    return JobPhase::Running;
  }
  if (state == "COMPLETED") return JobPhase::Succeeded;
  if (state == "CANCELLED") return JobPhase::Cancelled;
  if (state == "FAILED" || state == "TIMEOUT" || state == "NODE_FAIL" || state == "OUT_OF_MEMORY" ||
      state == "BOOT_FAIL" || state == "DEADLINE" || state == "PREEMPTED" || state == "REVOKED" ||
      state == "SPECIAL_EXIT") {
    return JobPhase::Failed;
  }
  return JobPhase::Pending;  // PENDING, REQUEUED, REQUEUE_HOLD, SUSPENDED, STOPPED, ...
}

bool is_final(JobPhase phase) {
  return phase == JobPhase::Succeeded || phase == JobPhase::Failed || phase == JobPhase::Cancelled;
}

const char* phase_name(JobPhase phase) {
  switch (phase) {
    case JobPhase::Pending: return "pending";
    case JobPhase::Running: return "running";
    case JobPhase::Succeeded: return "succeeded";
    case JobPhase::Failed: return "failed";
    case JobPhase::Cancelled: return "cancelled";
  }
  return "?";
}

int exit_status_of(const SlurmJobInfo& job) {
  auto colon = job.exit_code.find(':');
  auto number = [](std::string_view s) {
    int n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    return ec == std::errc{} && end == s.data() + s.size() ? n : -1;
  };
  int code = number(std::string_view(job.exit_code).substr(0, colon));
  int sig = colon == std::string::npos ? 0 : number(std::string_view(job.exit_code).substr(colon + 1));
  if (sig > 0) return 128 + sig;
  if (code > 0) return code;
  // Ended badly without a code of its own (TIMEOUT, NODE_FAIL, cancelled while pending): 1.
  return phase_of(job.state) == JobPhase::Succeeded ? 0 : 1;
}

}  // namespace ddp::slurm
