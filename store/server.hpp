#pragma once
// StoreServer: the TCPStore-compatible server on one Boost.Asio event loop. No thread per
// connection; each connection's bytes go through the incremental codec into StoreState.
// The supervisor embeds it on its own io_context; `ddp-launch store` runs it standalone.
#include <boost/asio/io_context.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "store/protocol.hpp"
#include "store/state.hpp"

namespace ddp::store {

struct ServerConfig {
  std::string host = "127.0.0.1";       // loopback unless an address is given
  std::uint16_t port = 0;               // 0: the kernel picks a free port
  Dialect legacy_dialect = Dialect::A;  // for connections that do not start with VALIDATE
  Limits limits;
  StateOptions state;
  // The fixes a bind error suggests, in the flags of the command that started this server.
  std::string busy_port_advice = "choose another port (--port 0 picks a free one)";
  std::string bad_host_advice = "--host 127.0.0.1 for loopback, 0.0.0.0 for every interface";
  std::string connection_limit_advice = " (--max-connections)";
  std::string pending_limit_advice = " (--max-pending-bytes)";
};

struct ServerStats {
  std::uint64_t accepted = 0;
  std::uint64_t open = 0;
  std::uint64_t requests = 0;
  std::size_t pending_bytes = 0;  // bytes of requests still arriving, all connections together
  std::uint64_t closed_for_violation = 0;
  std::uint64_t refused_over_limit = 0;
};

class StoreServer {
 public:
  // Binds and listens at once, so a busy port fails here (ddp::Error naming the holder).
  StoreServer(boost::asio::io_context& io, ServerConfig config);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  std::uint16_t port() const;
  std::string host() const;

  // Like every member, these run on the io_context's thread (post() them from another thread).
  void start();  // starts accepting on the io_context
  void stop();   // closes the listener and every connection

  // Fresh, empty state for a new restart attempt; connections stay open.
  void reset_state();
  void set_key_observer(StoreState::KeyObserver observer);
  void set_connection_observer(StoreState::ConnectionObserver observer);
  // The embedding process writes a key itself (as a SET from a client would: waiters wake, the
  // key observer sees it). For a supervisor that hosts the dynamic rendezvous.
  void set_local(std::string key, std::string value);
  const StoreState& state() const;
  ServerStats stats() const;

 private:
  class Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace ddp::store
