#include "launcher/supervisor/supervisor_events.hpp"

#include <chrono>

#include "common/exit_status.hpp"
#include "common/signals.hpp"

namespace ddp::launcher {

events::Started started_event(const SupervisorConfig& config, const StartFacts& facts) {
  return events::Started{.run_id = config.run_id,
                         .world_size = facts.world_size,
                         .nproc = config.plan.nproc_per_node,
                         .node_rank = config.plan.node_rank,
                         .store = store_mode_name(config.store_mode),
                         .filestore = facts.filestore,
                         .master_addr = config.master_addr,
                         .master_port = facts.master_port,
                         .supervisor_pid = facts.supervisor_pid,
                         .run_dir = config.run_dir.string(),
                         .log_dir = config.writes_log_files() ? std::optional(config.run_dir.string()) : std::nullopt,
                         .cgroup = facts.cgroup,
                         .memory_cgroup = facts.memory_cgroup};
}

events::RendezvousComplete rendezvous_complete_event(int attempt, int world_size, int nodes) {
  return events::RendezvousComplete{
      .attempt = attempt, .round = std::nullopt, .node_rank = std::nullopt, .world_size = world_size, .nodes = nodes};
}

events::RendezvousComplete rendezvous_complete_event(const RoundAssignment& round) {
  return events::RendezvousComplete{.attempt = std::nullopt,
                                    .round = round.round,
                                    .node_rank = round.node_rank,
                                    .world_size = round.world_size,
                                    .nodes = round.nnodes};
}

events::RootCause root_cause_event(const RootCauseEvent& rc) {
  return events::RootCause{.attempt = rc.attempt,
                           .rank = rc.rank,
                           .local_rank = rc.exit.local_rank,
                           .pid = rc.exit.pid,
                           .status = ExitStatus::of(rc.exit.exit_code, rc.exit.signal),
                           .role = rc.role,
                           .error = rc.error};
}

events::HangDetected hang_detected_event(const HangVerdict& v, const std::optional<std::string>& stacks_file) {
  events::HangDetected e{.attempt = v.attempt,
                         .suspect = v.suspect().rank,
                         .ranks = {},
                         .silent_s = {},
                         .progressing = v.progressing,
                         .first_by_s = v.first_by_s,
                         .hang_timeout = v.setting,
                         .timeout_s = v.timeout_s,
                         .stacks_file = stacks_file};
  for (const auto& s : v.silent) {
    e.ranks.push_back(s.rank);
    e.silent_s.push_back(s.silent_s);
  }
  return e;
}

events::GpuSample gpu_sample_event(const GpuSample& s) {
  return events::GpuSample{.rank = s.rank,
                           .local_rank = s.local_rank,
                           .device = s.device,
                           .util = s.sample.util_percent,
                           .mem_used_mib = s.mem_used_mib(),
                           .mem_total_mib = s.mem_total_mib()};
}

events::GpuLowUtil gpu_low_util_event(const GpuSample& s, const LowUtilAlert& a, const std::string& message) {
  return events::GpuLowUtil{.rank = s.rank,
                            .local_rank = s.local_rank,
                            .device = s.device,
                            .mean_util = a.mean_util,
                            .seconds = std::chrono::duration<double>(a.lasted).count(),
                            .message = message};
}

events::Straggler straggler_event(int attempt, const StragglerVerdict& v) {
  return events::Straggler{.attempt = attempt,
                           .rank = v.rank,
                           .ratio = v.ratio,
                           .median_step_s = v.median_step_s,
                           .rank_step_s = v.rank_step_s};
}

events::TimerExpired timer_expired_event(int attempt, const TimerExpiry& e) {
  return events::TimerExpired{.attempt = attempt,
                              .rank = e.rank,
                              .pid = e.pid,
                              .scope_id = e.scope_id,
                              .deadline = e.expiration_time,
                              .signal = e.signal > 0 ? std::optional(sig::signal_name(e.signal)) : std::nullopt};
}

events::Restarting restarting_event(int attempt, const std::optional<RestartDecision>& decision, int restarts_left,
                                    std::chrono::milliseconds delay) {
  events::Restarting e{.attempt = attempt, .failed_attempt = attempt - 1};
  e.delay_s = std::chrono::duration<double>(delay).count();
  if (decision) {
    e.progress = decision->progressed;
    e.checkpoint = decision->checkpoint;
    e.step = decision->step;
    e.no_progress_restarts = decision->no_progress_in_a_row;
    e.restarts_left = restarts_left;
  }
  return e;
}

events::Finished finished_event(int exit_code, const SupervisorMachine& machine) {
  events::Finished e{.exit_code = exit_code,
                     .state = std::string(group_state_name(machine.state())),
                     .attempts = machine.attempt() + 1,
                     .restarts = machine.attempt(),
                     .gave_up = std::nullopt};
  if (const auto& d = machine.restart_decision(); d && machine.state() == GroupState::Failed) {
    if (d->verdict == RestartVerdict::NoProgress) e.gave_up = "no_progress";
    if (d->verdict == RestartVerdict::BudgetSpent) e.gave_up = "max_restarts";
  }
  return e;
}

}  // namespace ddp::launcher
