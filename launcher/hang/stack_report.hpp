#pragma once
// Stack reports of hung ranks: the text a rank's stacks arrive as → frames per thread → one
// summary line that names the odd rank out. Pure (the source line of a frame comes through a
// reader the caller passes); launcher/hang/hang_forensics.hpp gathers the text.
//
// Three inputs, each found inside whatever else the text holds (a rank's stderr, gdb's chatter):
//   faulthandler (Python, PYTHONFAULTHANDLER=1 and SIGABRT):
//     Current thread 0x00007f... (most recent call first):
//       File "/w/train.py", line 41 in load_batch
//   gdb (`thread apply all bt`):
//     Thread 1 (Thread 0x7f... (LWP 123) "train"):
//     #3  0x0000555... in wait_for_peer (cv=...) at /w/hang.cpp:12
//     #0  0x00007f... in ?? () from /lib/x86_64-linux-gnu/libc.so.6
//   the worker SDK's SIGABRT handler (worker/stack_dump.hpp: glibc backtrace_symbols_fd between
//   two marker lines):
//     /w/prog(_Z13wait_for_peerv+0x2c)[0x55...]
//
//   summary: "ranks 0, 2, 3 wait in all_reduce (train.py:88); rank 1 is in train.py:41
//            load_batch: time.sleep(3600)"
// Ranks are grouped by their innermost user frame (outside torch, site-/dist-packages, the
// standard library, system headers and shared libraries) and the collective they wait in (the
// innermost torch.distributed function; for native stacks, a collective's name in a frame). A
// group outside any collective is the odd one out: its source line is quoted (faulthandler shows
// the Python line that called into C, e.g. time.sleep, but not what it called).
//
// Any input is safe: garbage, truncated dumps, megabytes of text (bounded frames and threads, no
// regex, no recursion).
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/env_contract.hpp"

namespace ddp::launcher {

struct StackFrame {
  std::string function;  // "load_batch", "c10d::ProcessGroupGloo::AsyncWork::wait", "??"
  std::string file;      // source file, else the library or executable it is in; "" unknown
  int line = 0;          // 0: no source line known
  bool operator==(const StackFrame&) const = default;
};

struct ThreadStack {
  std::string id;        // "0x00007f3343ad8040", "Thread 1 (LWP 123)"
  bool current = false;  // faulthandler's "Current thread" (the one the signal landed on)
  std::vector<StackFrame> frames;  // innermost first
};

enum class StackSource { Faulthandler, Gdb, SdkHandler };
std::string_view stack_source_name(StackSource source);  // "faulthandler", "gdb", "SDK handler"

// Bounds on what one parse keeps (beyond them the rest is dropped, the raw text is kept).
inline constexpr std::size_t kMaxThreads = 1024;
inline constexpr std::size_t kMaxFrames = 512;  // per thread
inline constexpr std::size_t kMaxLineBytes = 4096;  // longer lines are not frames

std::vector<ThreadStack> parse_faulthandler(std::string_view text);
std::vector<ThreadStack> parse_gdb(std::string_view text);
// Between kSdkBacktraceBegin and kSdkBacktraceEnd lines (a missing end: to the end of the text).
std::vector<ThreadStack> parse_sdk_backtrace(std::string_view text);
std::vector<ThreadStack> parse_stacks(StackSource source, std::string_view text);

// The worker SDK's markers around its backtrace (worker/stack_dump.cpp writes them).
inline constexpr std::string_view kSdkBacktraceBegin = env::kAbortBacktraceBegin;
inline constexpr std::string_view kSdkBacktraceEnd = env::kAbortBacktraceEnd;

// One rank's stacks, or why it has none.
struct RankStacks {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = 0;
  StackSource source = StackSource::Faulthandler;
  std::vector<ThreadStack> threads;
  std::string raw;      // the text they were parsed from (for the stacks file)
  std::string missing;  // why there are no stacks ("" when there are)
};

// Where a rank stands, from its main thread (Python: the thread with <module> at the bottom, else
// the current one; gdb: Thread 1; else the first).
struct RankPosition {
  std::optional<StackFrame> user_frame;  // innermost frame of the program's own code
  std::optional<StackFrame> innermost;   // innermost frame of all
  std::string collective;                // "all_reduce"; "" when not in one
};
RankPosition locate(const RankStacks& stacks);

// Whether a frame is the program's own code (not torch, packages, the standard library, system
// headers or a shared library).
bool is_user_frame(const StackFrame& frame, StackSource source);

// `file`'s line `line` (1-based), trimmed; nullopt when it cannot be read.
using SourceLineReader = std::function<std::optional<std::string>(const std::string& file, int line)>;
// The file system's (files up to 64 MiB; lines up to 512 bytes, longer ones cut).
std::optional<std::string> read_source_line(const std::string& file, int line);

// "ranks 0, 2, 3 wait in all_reduce (train.py:88); rank 1 is in train.py:41 load_batch:
// time.sleep(3600)"; ranks without stacks last ("rank 4 gave no stack: ..."). "" for no ranks.
std::string summarize_stacks(const std::vector<RankStacks>& ranks, const SourceLineReader& read_line);

// The stacks file: the summary, then per rank a header and the raw text it gave.
std::string stacks_file_text(const std::vector<RankStacks>& ranks, std::string_view summary);

}  // namespace ddp::launcher
