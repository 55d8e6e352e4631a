#pragma once
// WorkerStore: the store the workers meet in, per --store (supervisor_config.hpp's StoreMode):
//   agent: the supervisor hosts a TCPStore (node 0's, or the dynamic rendezvous host's);
//   rank0: the script's rank 0 binds --master-port (checked free before any worker starts, or a
//          free one picked);
//   file:  a FileStore file per attempt (a stale one a killed run left is removed first).
// It also gathers the rendezvous watchdog's evidence (launcher/rendezvous/rendezvous_watchdog.hpp).
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "launcher/rendezvous/rendezvous_watchdog.hpp"
#include "launcher/supervisor/supervisor_config.hpp"

namespace ddp::store {
class StoreServer;
}

namespace ddp::launcher {

class EventLog;

class WorkerStore {
 public:
  WorkerStore(boost::asio::io_context& io, const SupervisorConfig& config, EventLog& events);
  ~WorkerStore();
  WorkerStore(const WorkerStore&) = delete;
  WorkerStore& operator=(const WorkerStore&) = delete;

  // Prepares the store before any worker starts; returns the workers' MASTER_PORT. rdzv: the
  // dynamic rendezvous (nullptr: static); guardian: a fork of ours, not a FileStore user.
  // on_arrivals: our store's "init/" count, each time a worker's client adds itself.
  std::uint16_t prepare(Rendezvous* rdzv, pid_t guardian, std::function<void(std::int64_t)> on_arrivals);

  bool hosted() const { return server_ != nullptr; }                     // we host the workers' TCPStore
  store::StoreServer* server() const { return server_.get(); }           // nullptr: not hosted
  const std::filesystem::path& filestore() const { return filestore_; }  // --store file; else empty
  void reset_state();                                                    // our store's keys, for a fresh attempt
  void remove_filestore(const char* why);
  void stop();

  // What the watchdog needs: the ranks' count and, per live local rank, whether it reached the store.
  RendezvousEvidence evidence(const std::string& master_addr, std::uint16_t master_port,
                              std::vector<WatchedRank> ranks) const;

 private:
  void prepare_filestore(pid_t guardian);
  std::uint16_t host(Rendezvous* rdzv, std::function<void(std::int64_t)> on_arrivals);
  void check_rank0_port_free(std::uint16_t port);

  boost::asio::io_context& io_;
  const SupervisorConfig& config_;
  EventLog& events_;
  std::unique_ptr<store::StoreServer> server_;
  std::filesystem::path filestore_;
};

}  // namespace ddp::launcher
