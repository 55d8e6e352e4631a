#include "launcher/hang/hang_response.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "launcher/hang/flight_recorder.hpp"

namespace ddp::launcher {

// Declared in hang_forensics.hpp; here so the Windows build, which reads no stops, links it too.
std::string stopped_rank_text(pid_t pid, const proc::StoppedProcess& s) {
  if (s.traced && s.tracer > 0) {
    return fmt::format("it is held by a tracer, pid {}{}: a traced process runs only when its tracer lets it", s.tracer,
                       s.tracer_cmdline.empty() ? "" : fmt::format(" ({})", s.tracer_cmdline));
  }
  if (s.traced) return "it is stopped by a tracer (a debugger): it runs only when its tracer lets it";
  return fmt::format(
      "it is stopped (SIGSTOP or another stop signal; who sent it is not recorded): a stopped process cannot "
      "write its stacks or make progress until `kill -CONT {}`",
      pid);
}

void HangResponse::gather(HangResponseRequest request, std::function<void(HangEvidence)> done) {
  busy_ = true;
  HangEvidence evidence;
  if (!request.nccl_store || request.targets.empty()) {
    collect_stacks(std::move(request), std::move(evidence), std::move(done));
    return;
  }
  // The ranks must be alive to dump: the flight recorder first, the stacks (which kill) after.
  trigger_flight_recorder_dump(*request.nccl_store, request.suspect);
  evidence.nccl_triggered = true;
  std::vector<int> ranks;
  for (const auto& t : request.targets) ranks.push_back(t.rank);
  auto prefix = request.nccl_prefix;
  wait_for_flight_recorder_dumps(io_, prefix, ranks, kFlightRecorderWait,
                                 [this, request = std::move(request), evidence = std::move(evidence),
                                  done = std::move(done)](std::vector<std::filesystem::path> dumps) mutable {
                                   evidence.nccl_dumps = std::move(dumps);
                                   collect_stacks(std::move(request), std::move(evidence), std::move(done));
                                 });
}

void HangResponse::collect_stacks(HangResponseRequest request, HangEvidence evidence,
                                  std::function<void(HangEvidence)> done) {
  forensics_.collect(std::move(request.targets), request.stacks_file,
                     [this, evidence = std::move(evidence), done = std::move(done)](HangForensicsResult r) mutable {
                       busy_ = false;
                       evidence.stacks = std::move(r);
                       done(std::move(evidence));
                     });
}

std::string hang_evidence_text(const HangEvidence& e) {
  std::string out;
  const auto& s = e.stacks;
  if (!s.summary.empty()) out += fmt::format("  Stacks: {}\n", s.summary);
  if (!s.stacks_file.empty()) {
    out += fmt::format("  Every thread's stack: {}\n", s.stacks_file.string());
  } else if (!s.write_error.empty()) {
    out += fmt::format("  The stacks could not be written: {}\n", s.write_error);
  }
  if (e.nccl_triggered) {
    if (e.nccl_dumps.empty()) {
      out += "  NCCL flight recorder: triggered through the store; no dump appeared within 2 s\n";
    } else {
      out += fmt::format("  NCCL flight recorder dumps: {} (first: {})\n", e.nccl_dumps.size(),
                         e.nccl_dumps.front().string());
    }
  }
  return out;
}

}  // namespace ddp::launcher
