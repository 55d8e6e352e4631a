#pragma once
// Fault-injection points for tests, compiled only into a build configured with
// -DDDP_FAULT_INJECTION=ON (the dev and ci presets turn it on). Without it, fault_armed() is a
// constant false and every point compiles away: a release binary has no test hooks.
//
// A test arms points through the environment: DDP_FAULT_INJECT=point[,point...].
//   daemon-kill-after-spawn   the daemon SIGKILLs itself once a run has started, before its pid
//                             or Slurm id is committed (integration.jobs.recovery)
//   slow-pipe-reads           the supervisor handles every read of a worker's pipe 200 ms late, as
//                             a loaded machine may: a rank's last lines reach it after its exit
//                             (integration.launcher.lifecycle: the summary before a restart)
#include <string_view>

namespace ddp {

inline constexpr std::string_view kFaultInjectVariable = "DDP_FAULT_INJECT";
inline constexpr std::string_view kFaultKillAfterSpawn = "daemon-kill-after-spawn";
inline constexpr std::string_view kFaultSlowPipeReads = "slow-pipe-reads";

#ifdef DDP_FAULT_INJECTION
inline constexpr bool kFaultInjectionBuilt = true;
bool fault_armed(std::string_view point);
#else
inline constexpr bool kFaultInjectionBuilt = false;  // `if constexpr (kFaultInjectionBuilt)` emits nothing
constexpr bool fault_armed(std::string_view) { return false; }
#endif

}  // namespace ddp
