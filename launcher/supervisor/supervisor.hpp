#pragma once
// Supervisor: the I/O shell around SupervisorMachine. One Asio event loop: the embedded store,
// SIGCHLD and handled signals (signal_set), worker output pipes, timers. No polling loop.
#include "launcher/supervisor/supervisor_config.hpp"

namespace ddp::launcher {

// Runs the job to the end; returns the supervisor's exit code (0 success, 1 failure,
// 128+signo when stopped by a handled signal).
int run_supervisor(const SupervisorConfig& config);

}  // namespace ddp::launcher
