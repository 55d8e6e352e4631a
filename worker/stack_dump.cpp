#include "worker/stack_dump.hpp"

#include <execinfo.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <string_view>

#include "common/env_contract.hpp"

namespace ddp::worker {

namespace {

void write_all(const char* data, std::size_t size) {
  while (size > 0) {
    auto n = ::write(STDERR_FILENO, data, size);
    if (n <= 0) return;
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

// Decimal, without allocation (a signal handler cannot call fmt or snprintf safely).
std::size_t decimal(char* out, long value) {
  char digits[24];
  std::size_t n = 0;
  unsigned long v = value < 0 ? 0ul : static_cast<unsigned long>(value);
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v && n < sizeof digits);
  for (std::size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  return n;
}

void on_abort(int) {
  char line[160];
  std::size_t n = 0;
  auto put = [&](std::string_view s) {
    for (char c : s) {
      if (n < sizeof line) line[n++] = c;
    }
  };
  put(env::kAbortBacktraceBegin);
  put(" (pid ");
  n += decimal(line + n, static_cast<long>(::getpid()));
  put(", thread ");
  n += decimal(line + n, static_cast<long>(::syscall(SYS_gettid)));
  put("):\n");
  write_all(line, n);
  void* frames[128];
  int count = ::backtrace(frames, 128);
  ::backtrace_symbols_fd(frames, count, STDERR_FILENO);
  n = 0;
  put(env::kAbortBacktraceEnd);
  put("\n");
  write_all(line, n);
  ::raise(SIGABRT);  // SA_RESETHAND: the default action, once this handler returns
}

}  // namespace

void install_abort_backtrace() {
  void* warm[1];
  (void)::backtrace(warm, 1);  // loads libgcc_s now: the first call may allocate
  struct sigaction sa {};
  sa.sa_handler = on_abort;
  sa.sa_flags = static_cast<int>(SA_RESETHAND);
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGABRT, &sa, nullptr);
}

}  // namespace ddp::worker
