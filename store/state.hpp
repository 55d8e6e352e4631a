#pragma once
// StoreState: the meaning of every store command, with no sockets. The server feeds it parsed
// requests per connection; it answers through an Outbox (bytes to a connection, or "close this
// connection because ..."). Semantics follow torch's own server (spec §5), with two deliberate,
// switchable differences: the stale-WAIT mitigation for 1.13 clients (§5.6) and COMPARE_SET
// waking waiters (§5.4, what the libuv server does).
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/codec.hpp"
#include "store/protocol.hpp"

namespace ddp::store {

using ConnId = std::uint64_t;

class Outbox {
 public:
  virtual ~Outbox() = default;
  // Appends bytes to what `conn` will be sent, in order.
  virtual void send(ConnId conn, std::string_view bytes) = 0;
  // The client broke the protocol or a limit: close `conn` (after sending what is queued).
  virtual void close(ConnId conn, std::string_view reason) = 0;
};

struct StateOptions {
  // A 1.13 client whose WAIT timed out client-side sends nothing; a late STOP_WAITING would then
  // corrupt its next reply. The client only sends its next request after the WAIT finished or
  // raised, so a new request on a legacy (A/B) connection with a WAIT pending drops that WAIT.
  bool drop_stale_waits = true;
  // torch 1.13's server does not wake waiters when COMPARE_SET creates or changes a key; the
  // libuv server does. Waking is the useful behaviour.
  bool compare_set_wakes = true;
};

class StoreState {
 public:
  explicit StoreState(Limits limits = {}, StateOptions options = {});

  // Called after a client writes a key (SET, ADD, COMPARE_SET, APPEND, MULTI_SET, BARRIER), with the
  // key's new value: how the embedding supervisor sees rendezvous progress (`init/` counting ranks).
  using KeyObserver = std::function<void(std::string_view key, std::string_view value)>;
  void set_key_observer(KeyObserver observer) { observer_ = std::move(observer); }

  // Which connection names which keys, and when it goes: how the rendezvous host ties a member's
  // connection to the member (its requests name its token) and learns at once that it closed.
  // `named` runs for every key of every request, before the request is handled (connection 0: the
  // embedding process's own writes); `closed` once, when the connection is disconnected.
  struct ConnectionObserver {
    std::function<void(ConnId conn, std::string_view key)> named;
    std::function<void(ConnId conn)> closed;
  };
  void set_connection_observer(ConnectionObserver observer) { conn_observer_ = std::move(observer); }

  void connect(ConnId conn, Dialect dialect);
  void disconnect(ConnId conn);  // drops its waits and watches
  // Executes one request from `conn` (which must be connected). `req` may be moved from.
  void handle(ConnId conn, Request& req, Outbox& out);

  // Empties keys, queues, waits and watches: a fresh store for a new restart attempt (torch >= 2.x
  // workers use no per-attempt key prefix). Connections stay registered.
  void reset();

  std::size_t num_keys() const { return kv_.size(); }
  std::size_t total_bytes() const { return total_bytes_; }
  std::size_t connections() const { return conns_.size(); }
  std::size_t waiting_connections() const;
  std::optional<std::string_view> value(std::string_view key) const;
  const Limits& limits() const { return limits_; }

 private:
  struct WaitList;
  struct Waiter {
    ConnId conn;
    std::uint64_t generation;
  };
  struct WaitList {
    const std::string* key = nullptr;  // the map node's own key (node addresses are stable)
    std::vector<Waiter> entries;
    std::size_t live = 0;
  };
  struct Conn {
    Dialect dialect = Dialect::A;
    std::uint64_t generation = 0;         // bumped whenever its wait is cancelled or finished
    std::uint32_t pending = 0;            // keys still missing for its current WAIT/BARRIER
    std::vector<WaitList*> registered;    // one entry per registration (duplicates allowed)
    std::vector<std::string> watched;     // WATCH_KEY registrations (dialect A callback socket)
  };

  // One handler per operation.
  void op_set(ConnId, Request&, Outbox&);
  void op_compare_set(ConnId, Request&, Outbox&);
  void op_get(ConnId, Request&, Outbox&);
  void op_add(ConnId, Request&, Outbox&);
  void op_check(ConnId, Request&, Outbox&);
  void op_wait(ConnId, Request&, Outbox&);
  void op_num_keys(ConnId, Request&, Outbox&);
  void op_watch_key(ConnId, Request&, Outbox&);
  void op_delete_key(ConnId, Request&, Outbox&);
  void op_append(ConnId, Request&, Outbox&);
  void op_multi_get(ConnId, Request&, Outbox&);
  void op_multi_set(ConnId, Request&, Outbox&);
  void op_cancel_wait(ConnId, Request&, Outbox&);
  void op_ping(ConnId, Request&, Outbox&);
  void op_queue_push(ConnId, Request&, Outbox&);
  void op_queue_pop(ConnId, Request&, Outbox&);
  void op_queue_len(ConnId, Request&, Outbox&);
  void op_list_keys(ConnId, Request&, Outbox&);
  void op_barrier(ConnId, Request&, Outbox&);

  bool present(const std::string& key) const;
  bool keeps_stale_waits(const Conn& c) const { return !options_.drop_stale_waits && c.dialect != Dialect::C; }
  // Stores key=value (replace), accounting bytes; false (and the connection closed) when full.
  bool store_value(ConnId conn, std::string key, std::string value, Outbox& out, bool wake_waiters = true);
  bool reserve_bytes(ConnId conn, std::size_t add, std::size_t remove, Outbox& out);
  // ADD semantics: parses the current value (stoll-like), adds, stores decimal text.
  std::optional<std::int64_t> add_to(ConnId conn, const std::string& key, std::int64_t delta, Outbox& out);
  void register_wait(ConnId conn, Conn& c, const std::string& key);
  void cancel_wait(Conn& c);
  void wake(const std::string& key, Outbox& out);
  void wake_one(const std::string& key, Outbox& out);
  void finish_waiter(Conn& c, WaitList* list, ConnId conn, Outbox& out);
  void drop_registration(WaitList* list);
  void notify_watchers(const std::string& key, std::uint8_t type, std::string_view old_value,
                       std::string_view new_value, Outbox& out);
  void reply(ConnId conn, Outbox& out) { out.send(conn, scratch_); }

  Limits limits_;
  StateOptions options_;
  std::unordered_map<std::string, std::string> kv_;
  std::unordered_map<std::string, std::deque<std::string>> queues_;
  std::unordered_map<std::string, WaitList> waits_;
  std::unordered_map<std::string, std::vector<ConnId>> watchers_;
  std::unordered_map<ConnId, Conn> conns_;
  std::size_t total_bytes_ = 0;
  KeyObserver observer_;
  ConnectionObserver conn_observer_;
  std::string scratch_;  // reply being built
};

}  // namespace ddp::store
