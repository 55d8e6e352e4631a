#pragma once
// The rendezvous watchdog's judgment: never a silent freeze at rendezvous. When the timeout
// (--rdzv-timeout) passes before the ranks all reached the store, this decides from what the
// store and /proc say (launcher/supervisor/worker_store.hpp gathers it) whether the attempt fails, naming the
// local ranks that did not arrive and what they printed last. Pure; the timer that asks it is
// launcher/rendezvous/rendezvous_watch.hpp's.
//
// With our own store the count is exact: the timeout alone fails the attempt. Without it (rank0,
// file) the evidence is weaker (launcher/rendezvous/rendezvous_evidence.hpp): the attempt fails only when some
// local rank provably waits in the rendezvous while another never arrived; otherwise the
// supervisor looks again after another period.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

// A live local rank of the attempt.
struct WatchedRank {
  int rank = 0;  // global
  pid_t pid = 0;
  bool reached = false;                  // connected to the store / published itself in the FileStore
  std::vector<std::string> last_output;  // both streams, oldest first
};

struct RendezvousEvidence {
  bool own_store = false;               // the supervisor hosts the workers' store
  bool file_store = false;              // --store file: "never reached the FileStore" rather than "never connected"
  std::optional<std::int64_t> arrived;  // the ranks' own count; nullopt: unknown
  std::string where;                    // "the store at HOST:PORT", "the FileStore PATH"…
  std::vector<WatchedRank> ranks;
};

struct RendezvousJudgment {
  enum class Verdict {
    Complete,    // the ranks' own count says every rank arrived
    NoEvidence,  // no local rank provably waits for another (yet): look again later
    TimedOut,    // fail the attempt
  } verdict = Verdict::NoEvidence;
  std::string report;        // TimedOut: the summary's root cause
  std::vector<int> missing;  // global ranks of the local ranks that never arrived
};

RendezvousJudgment judge_rendezvous(const RendezvousEvidence& evidence, int world_size, int nnodes,
                                    std::chrono::milliseconds timeout);

}  // namespace ddp::launcher
