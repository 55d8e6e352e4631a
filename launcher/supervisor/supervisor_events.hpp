#pragma once
// The supervisor's values → the events it writes (common/events.hpp). Pure: the supervisor's loop
// says when, these say what; each one is the only place its event's fields are filled in.
#include <optional>
#include <string>

#include "common/events.hpp"
#include "launcher/hang/file_timer.hpp"
#include "launcher/hang/gpu_watch_core.hpp"
#include "launcher/hang/straggler_detector.hpp"
#include "launcher/rendezvous/rendezvous_client_machine.hpp"
#include "launcher/supervisor/failure_report.hpp"
#include "launcher/supervisor/supervisor_config.hpp"
#include "launcher/supervisor/supervisor_machine.hpp"

namespace ddp::launcher {

// What `started` says beyond the config: facts the supervisor learned while starting.
struct StartFacts {
  int world_size = 0;
  std::string filestore;  // "" unless --store file
  int master_port = 0;
  int supervisor_pid = 0;
  std::optional<std::string> cgroup;  // the run's cgroup v2 directory, when there is one
  bool memory_cgroup = false;
};
events::Started started_event(const SupervisorConfig& config, const StartFacts& facts);

// A static run's rendezvous (the store counted every rank) and a dynamic round's.
events::RendezvousComplete rendezvous_complete_event(int attempt, int world_size, int nodes);
events::RendezvousComplete rendezvous_complete_event(const RoundAssignment& round);

events::RootCause root_cause_event(const RootCauseEvent& rc);
// The progress watchdog's verdict; stacks_file: where the forensics wrote the ranks' stacks.
events::HangDetected hang_detected_event(const HangVerdict& v, const std::optional<std::string>& stacks_file);
events::GpuSample gpu_sample_event(const GpuSample& s);
events::GpuLowUtil gpu_low_util_event(const GpuSample& s, const LowUtilAlert& a, const std::string& message);
events::Straggler straggler_event(int attempt, const StragglerVerdict& v);
// The torch elastic timer signalled a pid of `attempt` (its signal ≤ 0: it sent none).
events::TimerExpired timer_expired_event(int attempt, const TimerExpiry& e);

// A restart, with the budget's decision on the failed attempt (none: a membership change's).
events::Restarting restarting_event(int attempt, const std::optional<RestartDecision>& decision, int restarts_left,
                                    std::chrono::milliseconds delay);
// The end: the machine's state, attempts, and why it gave up restarting.
events::Finished finished_event(int exit_code, const SupervisorMachine& machine);

}  // namespace ddp::launcher
