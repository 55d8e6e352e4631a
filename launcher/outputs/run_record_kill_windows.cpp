// launcher/outputs/run_record.hpp's kill_recorded on Windows: every recorded worker that still runs with its
// recorded start time as this user (workers_to_end: a reused pid, another user's process, is reported
// and left alone), ended with TerminateProcess (which checks both again on the handle it ends).
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "launcher/outputs/run_record.hpp"

namespace ddp::launcher {

std::vector<pid_t> kill_recorded(const RunRecordContent& r) {
  std::vector<pid_t> killed;
  std::vector<pid_t> spared;
  for (const auto& w : workers_to_end(r, proc::read_proc_stat, &spared)) {
    if (proc::terminate_process(w.pid, w.start_time)) killed.push_back(w.pid);
  }
  if (!spared.empty()) {
    spdlog::warn(
        "left pid {} alone: the record of a killed supervisor (pid {}) names it, but it is not that run's "
        "worker (another start time or user)",
        fmt::join(spared, ", pid "), r.supervisor.pid);
  }
  return killed;
}

}  // namespace ddp::launcher
