#pragma once
// What the supervisor does between a hang verdict (launcher/hang/progress_watch.hpp) and the kill: for
// an NCCL job on our store, NCCL's flight recorder is triggered on every rank through the store
// (launcher/hang/flight_recorder.hpp) and its dumps are waited for (≤ kFlightRecorderWait, while the
// ranks are still alive); then every live rank's stacks are taken (launcher/hang/hang_forensics.hpp:
// Python ranks die of the SIGABRT that makes faulthandler dump). `done` always comes, from the
// loop, within the two bounds. Meanwhile the supervisor holds the ranks' exits back (they are the
// collection's, not failures to act on) and replays them after `done`.
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "launcher/hang/hang_forensics.hpp"

namespace ddp::store {
class StoreServer;
}

namespace ddp::launcher {

struct HangEvidence {
  HangForensicsResult stacks;
  std::vector<std::filesystem::path> nccl_dumps;  // the flight recorder's, when it was triggered
  bool nccl_triggered = false;
};

struct HangResponseRequest {
  std::vector<StackTarget> targets;  // the attempt's live local ranks
  std::filesystem::path stacks_file;
  int suspect = 0;                           // global rank the dump is blamed on
  store::StoreServer* nccl_store = nullptr;  // our store, for an NCCL job; nullptr: no flight recorder
  std::string nccl_prefix;                   // <run_dir>/attempt_N/nccl_trace_rank_
};

class HangResponse {
 public:
  explicit HangResponse(boost::asio::io_context& io) : io_(io), forensics_(io) {}

  // One at a time (a second hang cannot come before the first's attempt is over).
  void gather(HangResponseRequest request, std::function<void(HangEvidence)> done);
  bool busy() const { return busy_; }

 private:
  void collect_stacks(HangResponseRequest request, HangEvidence evidence, std::function<void(HangEvidence)> done);

  boost::asio::io_context& io_;
  HangForensics forensics_;
  bool busy_ = false;
};

// The summary's lines about the evidence: the stacks' summary (naming the odd rank out), where
// every thread's stack is, the flight recorder's dumps. Empty when there is nothing to say.
std::string hang_evidence_text(const HangEvidence& e);

}  // namespace ddp::launcher
