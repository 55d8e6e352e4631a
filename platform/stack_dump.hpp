#pragma once
// Asking a hung process for every thread's stack, the way a crash would make it write them: what
// hang forensics (launcher/hang/hang_forensics.hpp) does to a rank it has given up on. The process
// writes the stacks to its own stderr and then dies.
//
// POSIX: RLIMIT_CORE set to 0 first (prlimit: no core file is left), then SIGABRT. A Python rank's
// faulthandler (PYTHONFAULTHANDLER=1) writes every thread's traceback; the worker SDK's handler a
// backtrace (worker/stack_dump.hpp).
//
// Windows has no signal to send. A thread is started in the process (CreateRemoteThread) at ntdll's
// RtlRaiseException, given an exception record written into the process (code kStackDumpCode). The
// exception goes first to the process's vectored exception handlers: faulthandler installs one on
// Windows (PYTHONFAULTHANDLER=1) that writes "Windows fatal exception: code 0xe0dd0001" and every
// Python thread's traceback, from any thread, without the GIL and without the hung thread's help.
// Unhandled, the exception then ends the process (the rank's Job Object has
// DIE_ON_UNHANDLED_EXCEPTION: no error-reporting dialog waits), with the code as its exit code.
// RtlRaiseException is an exported function, a valid Control Flow Guard target (a start address
// that is not one is a fail-fast that no handler sees), and it is found in the target at the
// target's own ntdll base. A rank started through a venv's python.exe (a launcher that runs the base
// interpreter as its child, since Python 3.7.2) is asked through that child, which runs faulthandler
// and shares its stderr.
#include <cstdint>
#include <string>
#include <string_view>

#include "platform/pid.hpp"

namespace ddp::platform {

// Whether process `pid` runs a Python interpreter: its executable's file name starts with "python"
// (Linux: /proc/PID/exe, e.g. python3.11; Windows: QueryFullProcessImageNameW, python.exe,
// pythonw.exe). False when it cannot be read.
bool runs_python(pid_t pid);

// Asks `pid` to write its stacks and die (above). "" when asked; else why it could not be, in words
// that name the mechanism ("SIGABRT could not be sent: No such process").
std::string request_stack_dump(pid_t pid);

// What request_stack_dump sends, for messages: "SIGABRT" / "the stack-dump exception (CreateRemoteThread)".
std::string_view stack_dump_name();

// Windows: the exception code of the request (an error code, "customer" bit set, 0xE0DD....): what
// faulthandler prints, and the rank's exit code. POSIX: unused.
inline constexpr std::uint32_t kStackDumpCode = 0xE0DD0001u;

// What gives a native (non-Python) rank's stacks on this platform when gdb does not: for the
// message that says none came.
std::string_view native_stack_dump_hint();

// A process left stopped (a debugger killed while attached) is let run again: SIGCONT. Windows:
// nothing (a killed debugger's process is let go by the OS).
void continue_process(pid_t pid);

}  // namespace ddp::platform
