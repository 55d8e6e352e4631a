#pragma once
// The progress watchdog's judgment: a rank that stops making progress while the others wait in a
// collective is found and named, instead of a silent freeze until NCCL's 10-minute timeout (or
// gloo's forever). Pure, on a clock it is given: the driver (launcher/hang/progress_watch.hpp) feeds it
// the progress evidence of each local rank (any output, a tqdm bar's `\r` redraw included, a metric line, a
// heartbeat-file write, the torch elastic timer's requests) and asks it, when the earliest deadline comes, whether a
// rank hangs.
//
// --hang-timeout SECONDS|auto|off (default auto):
//   SECONDS  a rank silent that long hangs; its clock starts when it is spawned.
//   auto     each rank's progress interval is learned after a warm-up: its first kWarmupEvents
//            evidence events (imports, rendezvous, the first step's set-up) are not learned from;
//            from then on the longest interval between two events is kept, and the rank is watched
//            with the timeout max(kAutoFloor, kAutoFactor × longest). The timeout only grows.
//            kAutoFactor = 5 is NVIDIA ft_launcher's safety factor (its computed timeouts are 5 × the
//            longest observed interval). kAutoFloor = 60 s: a step time learned from a chatty
//            script (0.1 s per line) would otherwise make any quiet phase a "hang"; 60 s keeps a
//            quiet but alive phase of half a minute (an evaluation, a short checkpoint) well clear
//            of the timeout, and still finds a hang 10 times sooner than NCCL's collective timeout.
//            A quiet phase longer than 60 s (a big checkpoint) needs a line or a heartbeat during
//            it, or --hang-timeout SECONDS / off.
//            A rank that never gives kWarmupEvents + 1 events stays unwatched; when no rank is
//            watched kAutoFloor after the attempt began, the judge says so once (a notice).
//   off      nothing is watched.
//
// DDP's reality: when one rank hangs the others block in the next collective and go silent too,
// shortly after. The verdict names the rank that went silent FIRST (the oldest last evidence) as
// the suspect, the other silent ones as waiting, and the ranks still heard from as progressing.
#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace ddp::launcher {

using ProgressClock = std::chrono::steady_clock;
using ProgressTime = ProgressClock::time_point;

struct HangTimeout {
  enum class Mode { Off, Fixed, Auto } mode = Mode::Auto;
  std::chrono::milliseconds fixed{0};  // Mode::Fixed
  bool operator==(const HangTimeout&) const = default;
};

inline constexpr double kAutoFactor = 5.0;
inline constexpr std::chrono::milliseconds kAutoFloor{60000};
inline constexpr int kWarmupEvents = 3;
// Evidence this close to the previous one is the same event (a burst: a banner, a traceback, several
// lines in one read): it moves the rank's last time but neither counts for the warm-up nor is learned.
inline constexpr std::chrono::milliseconds kBurst{50};

// "auto", "off", or a duration ("5", "5s", "500ms", "2m"); a UsageError naming --hang-timeout
// and the forms otherwise (0 included: "off" turns it off).
HangTimeout parse_hang_timeout(const std::string& value);
// "5s", "auto", "off": how the summary and the log name the setting.
std::string describe_hang_timeout(const HangTimeout& t);

struct SilentRank {
  int rank = 0;  // global
  int local_rank = 0;
  double silent_s = 0;  // since its last progress evidence (or its spawn)
};

struct HangVerdict {
  int attempt = 0;
  // Every silent rank, the suspect first, then by silence, longest first: a rank silent at least
  // half its timeout counts as silent (waiting), one heard from more recently as progressing.
  std::vector<SilentRank> silent;
  std::vector<int> progressing;  // global ranks
  std::vector<int> unwatched;    // global ranks that gave no progress signal (auto): not judged
  // How long before the next silent rank the suspect went silent; nullopt when it is the only one.
  // Under kBurst the output cannot tell the hung rank from the waiting ones (all printed their last
  // line together, e.g. right after a collective): the report says so, and only stacks can tell.
  std::optional<double> first_by_s;
  double timeout_s = 0;      // the suspect's timeout
  std::string setting;       // describe_hang_timeout
  bool other_nodes = false;  // the job has ranks on other nodes, which this judge does not see
  const SilentRank& suspect() const { return silent.front(); }
  bool suspect_is_clear() const { return !first_by_s || *first_by_s >= std::chrono::duration<double>(kBurst).count(); }
};

// The failure summary's root-cause text for a hang (the forensics' stacks are added by the caller).
std::string hang_report(const HangVerdict& v);

class ProgressWatchdog {
 public:
  explicit ProgressWatchdog(HangTimeout setting);

  // A new attempt's ranks (global ranks by local rank) were spawned at `now`: everything learned
  // of the last attempt is forgotten. world_size: the job's (0: these ranks are all of it).
  void begin(int attempt, const std::vector<int>& global_ranks, ProgressTime now, int world_size = 0);
  // Progress evidence of a local rank. Returns true when it changed the set of deadlines in a way
  // the driver's timer must learn of (a rank became watched): deadlines otherwise only move later,
  // so a timer armed for an earlier one just wakes, finds nothing due, and re-arms.
  bool on_progress(int local_rank, ProgressTime t);
  // The rank exited (or the group is stopping): no longer watched.
  void forget(int local_rank);
  void stop();  // nothing watched until the next begin

  struct NotDue {
    std::optional<ProgressTime> next;   // when to look again; nullopt: nothing to wait for
    std::optional<std::string> notice;  // auto found no progress signal: say so once
  };
  struct Hung {
    HangVerdict verdict;
  };
  // At `now`: a rank past its deadline → Hung; otherwise the earliest deadline.
  std::variant<NotDue, Hung> check(ProgressTime now);

  // A watched rank's timeout now (nullopt: unwatched). For tests and the log.
  std::optional<std::chrono::milliseconds> timeout_of(int local_rank) const;
  const HangTimeout& setting() const { return setting_; }

 private:
  struct Rank {
    int rank = 0;
    bool alive = true;
    ProgressTime last{};
    int events = 0;
    std::chrono::nanoseconds longest{0};  // learned after the warm-up (auto)
  };
  std::optional<ProgressTime> deadline(const Rank& r) const;
  std::optional<std::chrono::milliseconds> timeout(const Rank& r) const;
  HangVerdict verdict(ProgressTime now, const Rank& first_due) const;

  HangTimeout setting_;
  int attempt_ = 0;
  bool other_nodes_ = false;
  bool active_ = false;
  ProgressTime began_{};
  bool noticed_ = false;  // the no-signal notice is said once per run
  std::vector<Rank> ranks_;
};

}  // namespace ddp::launcher
