#pragma once
// Wall-clock time as the daemon's database and the supervisor's event file record it.
#include <chrono>

namespace ddp {

// Seconds since the Unix epoch (system clock), with sub-second precision.
inline double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace ddp
