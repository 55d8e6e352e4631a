#pragma once
// torch's elastic file timer (torch.distributed.elastic.timer.FileTimerClient), served by the
// supervisor: the pure parts. A worker that called
//   timer.configure(FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"]))
// writes one JSON line per `with expires(after=N)` entry and exit into that FIFO:
//   {"version": 1, "pid": 4242, "scope_id": "train.py#88", "expiration_time": 1796318085.25, "signal": 9}
// (torch 1.13: expiration_time is time.time() + N; a release is the same line with
// expiration_time -1 and signal 0; one line is at most PIPE_BUF bytes, the client refuses more).
// Here: the request's parsing, the lines of the byte stream, the deadline table (one entry per
// (pid, scope_id), its earliest expiry, what expired), and which rank a pid belongs to. The FIFO
// and the timer that drive them: launcher/hang/file_timer_server.hpp.
#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddp::launcher {

// --- where the FIFO is, and whether there is one -------------------------------------------------

// Its name in the run directory when TORCHELASTIC_TIMER_FILE is not set.
inline constexpr std::string_view kTimerFifoName = "torchelastic_timer.fifo";

struct FileTimerSetup {
  bool enabled = false;
  std::string path;            // the FIFO (enabled only)
  bool path_from_env = false;  // TORCHELASTIC_TIMER_FILE gave it
  std::string warning;         // set but not "1": why nothing is served (empty: nothing to say)
};

// From the supervisor's environment and its run directory: TORCHELASTIC_ENABLE_FILE_TIMER=1
// enables it; the FIFO is $TORCHELASTIC_TIMER_FILE, else <run_dir>/torchelastic_timer.fifo (not
// torch's /tmp/watchdog_timer_<uuid>: the run directory is this run's own, so the FIFO is private
// to it, goes with it, and a killed supervisor's leftover is swept with its run directory instead
// of piling up in a shared /tmp).
// ($TORCHELASTIC_ENABLE_FILE_TIMER, $TORCHELASTIC_TIMER_FILE: common/env_contract.hpp. torch 1.13's
// LocalElasticAgent starts its FileTimerServer only when the first is exactly "1".)
FileTimerSetup file_timer_setup(const std::map<std::string, std::string>& env, const std::string& run_dir);

// --- one request ---------------------------------------------------------------------------------

// Longer lines are not torch's (its client refuses requests over PIPE_BUF, 4096 bytes on Linux).
inline constexpr std::size_t kMaxTimerRequestBytes = 4096;

struct FileTimerRequest {
  pid_t pid = 0;
  std::string scope_id;
  double expiration_time = 0;  // seconds since the epoch (the worker's time.time()); < 0: release
  int signal = 0;              // ≤ 0: expire without signalling (torch's rule)
  bool release() const { return expiration_time < 0; }
};

struct ParsedTimerRequest {
  std::optional<FileTimerRequest> request;
  std::string error;         // why not, when there is no request
  std::optional<pid_t> pid;  // the sender's pid when the line names one (to attribute an error)
};

// One line (without its newline). Never throws: anything but a JSON object with an integer "pid"
// > 0, a string "scope_id", a finite number "expiration_time" and an integer "signal" < 65 (the
// signals kill(2) knows) is an error naming the field. "version" is not checked (torch's server
// does not either).
ParsedTimerRequest parse_timer_request(std::string_view line);

// --- the byte stream → lines ----------------------------------------------------------------------

// The FIFO's bytes, split into lines. A line longer than the limit is cut off: one Oversized
// entry (its first bytes kept for the log) and its rest skipped up to the next newline, so a
// writer that never ends its line cannot make the buffer grow.
class TimerLineSplitter {
 public:
  explicit TimerLineSplitter(std::size_t max_line = kMaxTimerRequestBytes) : max_line_(max_line) {}
  struct Line {
    std::string text;
    bool oversized = false;
  };
  std::vector<Line> feed(std::string_view bytes);
  std::size_t buffered() const { return partial_.size(); }

 private:
  std::size_t max_line_;
  std::string partial_;
  bool skipping_ = false;
};

// --- the deadline table ----------------------------------------------------------------------------

// A timer that passed its deadline: what to signal and what to record.
struct TimerExpiry {
  pid_t pid = 0;
  int rank = 0;
  std::string scope_id;
  double expiration_time = 0;
  int signal = 0;  // ≤ 0: the worker asked for no signal
};

// One deadline per (pid, scope_id), as torch's server keeps them: an acquire sets (or replaces)
// it, a release removes it. At most `capacity` entries: beyond, acquires are refused.
class FileTimerTable {
 public:
  explicit FileTimerTable(std::size_t capacity = 65536) : capacity_(capacity) {}
  // Acquire or release; `rank`: the rank the pid belongs to. false: refused (table full).
  bool apply(const FileTimerRequest& request, int rank);
  std::optional<double> earliest() const;  // the first deadline (seconds since the epoch)
  // The pids with a deadline ≤ now, one expiry each (torch's rule: of its expired timers, the
  // earliest with a signal > 0, else the earliest); every timer of those pids is removed.
  std::vector<TimerExpiry> take_expired(double now);
  void forget(pid_t pid);  // a worker that exited
  void clear();            // a new attempt
  std::size_t size() const { return timers_.size(); }

 private:
  struct Timer {
    int rank = 0;
    double expiration_time = 0;
    int signal = 0;
  };
  std::size_t capacity_;
  std::map<std::pair<pid_t, std::string>, Timer> timers_;
  std::multiset<double> deadlines_;  // the timers' deadlines, for earliest()
  void erase(std::map<std::pair<pid_t, std::string>, Timer>::iterator it);
};

// --- which rank a pid belongs to -------------------------------------------------------------------

// The rank of the live worker `pid` is, or descends from (a DataLoader worker, a subprocess: torch's
// client sends its own os.getpid()), following parents (`parent_of`: nullopt when the process is
// gone) at most `max_depth` steps. nullopt: not this attempt's, so never signalled — the FIFO is
// writable by any process of the user, and its pid could be anything (this supervisor, another
// job's worker, a pid reused by an unrelated process after the worker died).
std::optional<int> rank_of_pid(pid_t pid, const std::map<pid_t, int>& worker_ranks,
                               const std::function<std::optional<pid_t>(pid_t)>& parent_of, int max_depth = 32);

// --- logging bad requests once per sender ----------------------------------------------------------

// Whether this is the first complaint about `sender` (a pid; -1: no pid known); later ones are
// only counted. Remembers at most `max_senders` senders (then everything is counted only).
class OncePerSender {
 public:
  explicit OncePerSender(std::size_t max_senders = 1024) : max_senders_(max_senders) {}
  bool first(pid_t sender);
  std::size_t total() const { return total_; }
  std::size_t logged() const { return logged_; }

 private:
  std::size_t max_senders_;
  std::set<pid_t> seen_;
  std::size_t total_ = 0;
  std::size_t logged_ = 0;
};

}  // namespace ddp::launcher
