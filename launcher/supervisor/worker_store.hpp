#pragma once
// WorkerStore: the store the workers meet in, per --store (store_mode.hpp):
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
#include "launcher/supervisor/store_mode.hpp"

namespace ddp::store {
class StoreServer;
}

namespace ddp::launcher {

class EventLog;
class Rendezvous;  // launcher/rendezvous/rendezvous.hpp

// What the store needs of the run's config (supervisor_run.hpp's worker_store_config).
struct WorkerStoreConfig {
  StoreMode mode = StoreMode::Agent;
  std::string master_addr = "127.0.0.1";  // as given: a single node's store binds exactly it
  std::uint16_t master_port = 0;          // 0: a free one is picked
  int node_rank = 0;
  int nnodes = 1;
  std::filesystem::path filestore;  // --store file: the file (--filestore, or <run_dir>/filestore)
  std::string dynamic_host;         // --rdzv-backend c10d: where every node reaches this one
};

class WorkerStore {
 public:
  WorkerStore(boost::asio::io_context& io, WorkerStoreConfig config, EventLog& events);
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
  const WorkerStoreConfig config_;
  EventLog& events_;
  std::unique_ptr<store::StoreServer> server_;
  std::filesystem::path filestore_;
};

}  // namespace ddp::launcher
