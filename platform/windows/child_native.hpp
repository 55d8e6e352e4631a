#pragma once
// What a started child is on Windows (platform/spawn.hpp's Child::Native), shared by the spawn and
// the exit wait (child_exits.cpp): its process and Job Object handles, and the stop we sent, so its
// exit can be told in the supervisor's words (killed by SIGKILL, or by SIGTERM's Ctrl-Break).
#include <windows.h>

#include <atomic>

#include "platform/spawn.hpp"
#include "platform/windows/wide.hpp"

namespace ddp {

struct Child::Native {
  platform::win::Handle process;
  platform::win::Handle job;
  std::atomic<int> stopped_by{0};  // the signal number of our last stop request that took effect
};

namespace platform::win {

// The exit code TerminateJobObject gives the processes of a job we end (SIGKILL): 128 + 9, what a
// shell reports for a SIGKILLed process.
inline constexpr DWORD kKilledExitCode = 137;
// What a console process ends with when a Ctrl-C or Ctrl-Break event ends it.
inline constexpr DWORD kControlCExit = 0xC000013A;  // STATUS_CONTROL_C_EXIT

}  // namespace platform::win
}  // namespace ddp
