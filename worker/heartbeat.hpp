#pragma once
// The hang watchdog's heartbeat (`ddp-launch run --hang-timeout`): a worker that is alive but
// prints nothing for a while (a long computation, a checkpoint) says it is making progress.
// No libtorch: part of ddp_worker_core.
#include <string>

namespace ddp::worker {

// Opens the rank's heartbeat file ($DDP_HEARTBEAT_FILE, common/env_contract.hpp) for writing and
// closes it: the supervisor sees the close through inotify. Two system calls, no output line.
// Returns false when the variable is unset (not under ddp-launch) or the file cannot be opened;
// never throws.
bool heartbeat();

// The same for an explicit path (the variable's value); for tests and callers that cache it.
bool heartbeat(const std::string& path);

}  // namespace ddp::worker
