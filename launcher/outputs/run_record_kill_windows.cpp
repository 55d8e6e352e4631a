// launcher/outputs/run_record.hpp's kill_recorded on Windows: every recorded worker that still runs with its
// recorded start time (a reused pid is someone else's), ended with TerminateProcess.
#include "launcher/outputs/run_record.hpp"

namespace ddp::launcher {

std::vector<pid_t> kill_recorded(const RunRecordContent& r) {
  std::vector<pid_t> killed;
  for (const auto& w : r.workers) {
    if (w.pid > 0 && w.start_time != 0 && proc::terminate_process(w.pid, w.start_time)) killed.push_back(w.pid);
  }
  return killed;
}

}  // namespace ddp::launcher
