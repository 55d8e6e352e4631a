#pragma once
// HangForensics: every hung rank's stacks, taken before the supervisor kills the group, written
// to a stacks file with a summary that names the odd rank out (launcher/hang/stack_report.hpp). Runs on
// the supervisor's Asio loop and never blocks it; `done` always comes, within `bound`.
//
//   1. native ranks (their executable is not a python: platform::runs_python), when gdb is there: `gdb -p PID -batch -nx -ex
//      'thread apply all bt'`, all at once, each within gdb_timeout. gdb stops a rank only while it
//      reads it, so the others' stacks are what the hang left.
//   2. then, all at once, platform/stack_dump.hpp's request (POSIX: SIGABRT, no core file; Windows: an
//      exception raised in the rank by a thread started in it) to every Python rank (a stopped rank, SIGSTOP
//      or a debugger's, cannot act on it: it is named as stopped at once instead of waited for)
//      (PYTHONFAULTHANDLER=1, set by worker_env: faulthandler writes every thread's traceback to stderr, then
//      the process dies) and to every native rank gdb could not read (POSIX: the worker SDK's handler writes a
//      backtrace: worker/stack_dump.hpp). The dump arrives on the rank's stderr pipe, which the log router
//      reads (capture_stream): it ends at the pipe's end, or `exit_grace` after the rank is gone (a child that
//      inherited the pipe keeps it open), or at the bound.
//
// The signalled ranks die of it (SIGABRT; Windows: exit code platform::kStackDumpCode): the supervisor, which kills the group next anyway, must
// neither restart nor tear down the group on those exits before `done` (the stacks would be cut).
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/hang/stack_report.hpp"
#include "platform/pid.hpp"
#include "platform/proc.hpp"

namespace ddp::launcher {

struct RankOutput;

struct StackTarget {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = 0;
  RankOutput* output = nullptr;  // its routed output (the SIGABRT dumps come on its stderr); nullptr: none
};

struct HangForensicsOptions {
  std::chrono::milliseconds bound{10000};       // `done` comes within this
  std::chrono::milliseconds gdb_timeout{6000};  // the gdb runs (together) are stopped after this
  std::chrono::milliseconds exit_grace{300};    // a signalled rank gone: its last bytes are read by then
  std::optional<std::filesystem::path> gdb;     // nullopt: no gdb (every rank takes the stack-dump request's route)
  SourceLineReader read_line = read_source_line;
};

// Why a stopped rank (SIGSTOP, a debugger: proc::stopped) gives no stack and what resumes it:
// "it is stopped (SIGSTOP or another stop signal; who sent it is not recorded): ..." or "it is held
// by a tracer, pid 812 (gdb -p 4242): ...".
std::string stopped_rank_text(pid_t pid, const proc::StoppedProcess& s);

// Options with gdb from this process's PATH (platform::find_program).
HangForensicsOptions default_hang_forensics_options();

struct HangForensicsResult {
  std::filesystem::path stacks_file;  // where they were written; empty when the file could not be
  std::string write_error;            // why not
  std::string summary;                // stack_report.hpp's summarize_stacks
  std::vector<RankStacks> ranks;      // per target, in the order given
  std::chrono::milliseconds took{0};
};

class HangForensics {
 public:
  explicit HangForensics(boost::asio::io_context& io, HangForensicsOptions options = default_hang_forensics_options());
  ~HangForensics();  // a collection under way is abandoned: no `done`; its gdb runs are killed
  HangForensics(const HangForensics&) = delete;
  HangForensics& operator=(const HangForensics&) = delete;

  // Takes every target's stacks (they may die of it), writes them to `stacks_file` (its directory
  // is created), then calls `done` from the loop: always, within the bound, naming the ranks that
  // gave no stack and why. One collection at a time: a second call while one runs is refused with
  // every rank missing ("another collection is under way").
  void collect(std::vector<StackTarget> targets, std::filesystem::path stacks_file,
               std::function<void(HangForensicsResult)> done);
  bool busy() const;

  struct Collection;

 private:
  boost::asio::io_context& io_;
  HangForensicsOptions options_;
  std::shared_ptr<Collection> current_;
};

}  // namespace ddp::launcher
