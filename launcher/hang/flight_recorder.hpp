#pragma once
// NCCL's flight recorder, dumped on every rank from the store the supervisor hosts, before a hung
// group is killed. The workers get the variables from worker_env (hang_forensics_env): a trace
// buffer, dump on timeout, dumps into <run_dir>/attempt_N/nccl_trace_rank_<rank>.
//
// The trigger, as read in pytorch/pytorch torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp/.cpp
// (2.x main, the heartbeat monitor):
//   - ProcessGroupNCCL.hpp: `constexpr const char* EXCEPTION_DUMP = "exception_dump";`
//   - the constructor: `globalStore_ = prefixStore ? prefixStore->getUnderlyingNonPrefixStore() :
//     store_;` — the key lives below every PrefixStore (torchelastic's /worker/attempt_N, the
//     group's own prefix): in the TCPStore at MASTER_ADDR:MASTER_PORT, which is ours;
//   - heartbeatMonitor(): every TORCH_NCCL_COORD_CHECK_MILSEC (1000 ms) once no work was enqueued
//     or retired for kWatchdogThreadSleepMillis, `globalStore_->check({EXCEPTION_DUMP})`; when the
//     key is there, `globalStore_->get(EXCEPTION_DUMP)`, `vec.size() == sizeof(int)` checked, and
//     memcpy'd into the int "timeOutRank" it names in its log; then every rank dumps;
//   - the watchdog sets it itself on a timeout the same way: the bytes of `int rank` (host order).
// torch's TCPStore client puts "/" before every key (TCPStore.hpp `keyPrefix_ = "/"`): on the wire,
// and in our StoreState, the key is "/exception_dump".
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::store {
class StoreServer;
}

namespace ddp::launcher {

inline constexpr std::string_view kFlightRecorderDumpKey = "/exception_dump";
// torch polls once a second: the dumps are there about a second after the key.
inline constexpr std::chrono::milliseconds kFlightRecorderWait{2000};

// The key's value: `rank` (the one the dump is blamed on) as the 4 bytes of a host-order int.
std::string flight_recorder_dump_value(int rank);

// Sets the key in our store: every NCCL rank's heartbeat monitor sees it within a second and dumps.
void trigger_flight_recorder_dump(store::StoreServer& server, int blamed_rank);

// Calls `done` (from the loop) with the dump files <prefix><rank> of `ranks` that exist (and are
// not empty) once all of them do, or when `timeout` passes.
void wait_for_flight_recorder_dumps(boost::asio::io_context& io, std::string prefix, std::vector<int> ranks,
                                    std::chrono::milliseconds timeout,
                                    std::function<void(std::vector<std::filesystem::path>)> done);

}  // namespace ddp::launcher
