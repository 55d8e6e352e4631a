#pragma once
// StoreClient: a synchronous client for c10d TCPStore servers (ours, or torch's own), over
// platform/tcp_client.hpp's sockets with deadlines (POSIX and Windows), so that worker programs can
// link it without Asio.
//
// One connection, at most one request in flight (like torch's client, which holds a mutex for the
// whole call). Keys go on the wire exactly as given: torch's TCPStore puts "/" in front of every
// user key, so a key a Python worker calls "k" is "/k" here.
//
// Any timeout or I/O error in the middle of a call leaves the connection in an unknown state (a
// late reply would be taken for the answer to the next request), so the client closes it and the
// next call reconnects, within the connect timeout. Nothing is retried after bytes were sent:
// ADD and APPEND are not idempotent.
#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.hpp"
#include "store/protocol.hpp"

namespace ddp::store {

// Every client error names the endpoint, the operation and key(s), and the time waited.
class StoreError : public ddp::Error {
 public:
  using ddp::Error::Error;
};
// No connection (and, in dialect C, no handshake) within the connect timeout.
class StoreConnectError : public StoreError {
 public:
  using StoreError::StoreError;
};
// A wait, or the reply to a request, did not arrive within the call's timeout.
class StoreTimeout : public StoreError {
 public:
  using StoreError::StoreError;
};
// The connection broke during a call (closed or reset by the server, which is also how a server
// reports a request it rejects: the protocol has no error reply).
class StoreConnectionError : public StoreError {
 public:
  using StoreError::StoreError;
};
// The server answered something this protocol does not allow (a wrong PING echo, a bad enum).
class StoreProtocolError : public StoreError {
 public:
  using StoreError::StoreError;
};
// The operation does not exist in the client's dialect (e.g. APPEND or PING against torch 1.13).
class StoreUnsupported : public StoreError {
 public:
  using StoreError::StoreError;
};

struct ClientOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 29500;
  // C: torch >= 2.2 servers and ours (VALIDATE + PING handshake). A: torch 1.13/2.0 servers.
  // B: torch 2.1 servers (no handshake, CANCEL_WAIT, APPEND, MULTI_*).
  Dialect dialect = Dialect::C;
  // Connecting (with retries on refused/unreachable) and, in dialect C, the handshake.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(30)};
  // Each call as a whole: a wait, or a request and its reply. torch's store default is 300 s.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // A reply value longer than this is treated as a protocol error rather than allocated.
  std::size_t max_reply_bytes = 64u << 20;
};

class StoreClient {
 public:
  // Connects at once, retrying refused or unreachable connects with exponential backoff and
  // jitter until connect_timeout; throws StoreConnectError naming the endpoint and the last error.
  explicit StoreClient(ClientOptions options);
  ~StoreClient();
  StoreClient(StoreClient&&) noexcept;
  StoreClient& operator=(StoreClient&&) noexcept;
  StoreClient(const StoreClient&) = delete;
  StoreClient& operator=(const StoreClient&) = delete;

  const ClientOptions& options() const;
  std::string endpoint() const;  // "host:port"
  void set_timeout(std::chrono::milliseconds timeout);

  void set(std::string_view key, std::string_view value);
  // WAIT for the key (up to the call timeout), then GET it, as torch's client does.
  std::string get(std::string_view key);
  std::int64_t add(std::string_view key, std::int64_t delta);
  // Returns the value now stored, or, for an absent key and a non-empty `expected`, `expected`
  // (torch's quirk: nothing is stored).
  std::string compare_set(std::string_view key, std::string_view expected, std::string_view desired);
  bool check(const std::vector<std::string>& keys);  // true when every key exists
  void wait(const std::vector<std::string>& keys);   // with the call timeout
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout);
  std::int64_t num_keys();
  bool delete_key(std::string_view key);                      // true when the key existed
  void append(std::string_view key, std::string_view value);  // B, C only
  // WAIT for every key, then read them all. Dialect A has no MULTI_*; there the values are read
  // (and written) one key at a time, as torch's base Store does, so they are not atomic together.
  std::vector<std::string> multi_get(const std::vector<std::string>& keys);
  void multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values);
  // A PING round trip with this process's pid as the nonce (C only); returns the round-trip time.
  std::chrono::microseconds ping();
  // How many connections this client has made so far (1 after construction; each reconnect adds one).
  std::uint64_t connections_made() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The delay before connect attempt `attempt + 1` (pure, for tests): 10 ms doubling per attempt up
// to 1 s, scaled by a jitter factor in [0.5, 1] drawn from `rng` so that many workers started
// together do not knock on the store in lockstep.
std::chrono::milliseconds connect_backoff(unsigned attempt, std::mt19937& rng);

}  // namespace ddp::store
