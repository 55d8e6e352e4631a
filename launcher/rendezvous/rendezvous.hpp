#pragma once
// Rendezvous: the dynamic (c10d) rendezvous shell over the store. The supervisor that can bind
// --rdzv-endpoint hosts the rendezvous store and runs the RendezvousMachine on its event loop;
// every other supervisor joins through a StoreClient driven by one helper thread (the client is
// synchronous) that performs what the RendezvousClientMachine asks and posts what it learns back
// to the supervisor's event loop (rendezvous_client.cpp).
//
// Key layout under "rdzv/<run id>/" (O(1) store operations per node and round; the host computes
// the assignment once and writes one key per node):
//   node → host   join/<token>/<seq>   {token, host, nproc, hint, seq, last: {round, failed,
//                                       checkpoint, step}}: how its last attempt ended (SET)
//                 hb/<token>           heartbeat count                        (ADD, every interval: its
//                                                                        reply proves the store is there)
//                 done/<token>         its workers all succeeded              (SET)
//                 leave/<token>        why it gives up                        (SET)
//   host → node   assign/<token>/<seq> {round, node_rank, nnodes, world_size, rank_base, master_addr,
//                                       master_port, restart?} or {closed: why, restart?}
//                                                                             (node: WAIT + GET)
//                 wake/<token>/<round> {reason, closed, restart?}: stop and rejoin (node: WAIT + GET)
//                 budget               {used, max_restarts, no_progress_in_a_row, round}: the job's
//                                      restart budget, written at each failed round (restart: the
//                                      budget's decision on it, the same for every node)
//                 round/<round>        the membership, for diagnosis
//                 host                 {token, host, pid}: who hosts this store (set before it listens;
//                                      read by a node when it connects, and again on every reconnect)
// The workers meet in a separate store the host runs on an ephemeral port (MASTER_ADDR is the
// endpoint's host): it is reset when a round is published, while the rendezvous keys live on.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "launcher/rendezvous/rendezvous_client_machine.hpp"  // RoundAssignment; includes RendezvousMachine

namespace ddp::launcher {

struct RendezvousConfig {
  std::string endpoint_host;
  std::uint16_t endpoint_port = 29400;
  std::string run_id = "none";
  RdzvPolicy policy;
  std::chrono::milliseconds exit_barrier{300000};  // the host waits this long for every node to finish
  std::string local_addr;  // this node's name in logs and ranks (--local-addr, else the host name)
  int nproc = 1;
  int rank_hint = -1;
  std::optional<bool> is_host;  // --rdzv-conf is_host=…; default: whoever can bind the endpoint
  // A joined node that gets no answer from the rendezvous store for this long (reconnecting with
  // backoff meanwhile) gives up: the store's host is gone, and the job's rendezvous state with it.
  // 0: the heartbeat timeout (the host would count the node dead by then anyway).
  std::chrono::milliseconds store_lost_timeout{0};
  std::chrono::milliseconds store_lost_window() const {
    return store_lost_timeout.count() > 0 ? store_lost_timeout : policy.heartbeat_timeout;
  }
};

struct RendezvousCallbacks {
  std::function<void(const RoundAssignment&)> assigned;
  std::function<void(const std::string& reason)> round_ended;  // stop the workers, then join() again
  // The job is over: finish as failed (with the decision's exit code when the job's restart budget ended it).
  std::function<void(const std::string& reason, const std::optional<RestartDecision>& restart)> closed;
  // Host only: a node was declared dead, silent this long (since its last heartbeat), and why.
  std::function<void(const std::string& host, std::chrono::milliseconds silent, const std::string& reason)> node_lost;
};

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  // Binds the endpoint if it can (then hosts), else connects as a client (in the helper thread).
  // Callbacks run on `io`'s thread.
  static std::unique_ptr<Rendezvous> create(boost::asio::io_context& io, RendezvousConfig config,
                                            RendezvousCallbacks callbacks);

  virtual bool is_host() const = 0;
  // Host only: where the workers' store is, and how to empty it for a new round.
  virtual void set_worker_store(std::string addr, std::uint16_t port, std::function<void()> reset) = 0;
  // Join the next round (at start, and after the workers of the last one stopped), saying how this
  // node's last attempt ended: the host weighs it against the job's restart budget.
  virtual void join(const RdzvAttemptReport& last) = 0;
  // The node is finished: success (host: keeps the store up until every node finished or the exit
  // barrier passed) or not (the others learn why). `then` runs on the event loop once that is done.
  virtual void finish(bool success, std::string why, std::function<void()> then) = 0;
  virtual std::string endpoint() const = 0;
};

// The node name used when --local-addr is not given.
std::string default_node_name();

}  // namespace ddp::launcher
