#pragma once
// A native worker's backtrace on SIGABRT, for the supervisor's hang forensics where gdb is absent
// or may not attach (launcher/hang/hang_forensics.hpp): the thread the signal lands on (the main thread,
// for a kill(2) to the process) writes its frames to stderr between env::kAbortBacktraceBegin and
// env::kAbortBacktraceEnd (glibc's backtrace_symbols_fd), then the process dies of SIGABRT as it
// would have. A program's own abort() (std::terminate…) gets the same backtrace.
//
// Function names need the executable's symbols exported (link with -rdynamic, CMake's
// ENABLE_EXPORTS); otherwise its frames show as offsets. run_main (distributed.hpp) installs it.
namespace ddp::worker {

// Installs the handler (once is enough; again is harmless). Async-signal-safe inside: no
// allocation, only write(2) and glibc's backtrace, whose library is loaded here beforehand.
void install_abort_backtrace();

}  // namespace ddp::worker
