#pragma once
// Waiting for a child that no platform::ChildExits watches (a short helper the caller drives on its
// own, e.g. hang forensics' gdb), and reaping it. Implemented beside spawn_process.
#include "platform/spawn.hpp"

namespace ddp::platform {

// Whether `child` has ended, reaping it (POSIX: waitpid; never for a child a ChildExits watches:
// that one reaps it). `wait`: block until it has. Windows: its process handle is signalled.
bool reap_child(const Child& child, bool wait);

}  // namespace ddp::platform
