#include "store/client.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#include "platform/host.hpp"
#include "platform/tcp_client.hpp"
#include "store/codec.hpp"

namespace ddp::store {
namespace {

using Clock = std::chrono::steady_clock;
using platform::TcpClient;
using std::chrono::milliseconds;
using IoResult = TcpClient::Io;

long long ms_since(Clock::time_point start) {
  return static_cast<long long>(std::chrono::duration_cast<milliseconds>(Clock::now() - start).count());
}

// Keys are arbitrary bytes; messages show them quoted, escaped, and at most a few of them.
std::string quote(std::string_view key) {
  std::string out = "'";
  for (char ch : key) {
    auto c = static_cast<unsigned char>(ch);
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c >= 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  out += "'";
  return out;
}

std::string describe_keys(const std::vector<std::string>& keys) {
  constexpr std::size_t kShown = 5;
  std::string out = "[";
  for (std::size_t i = 0; i < keys.size() && i < kShown; ++i) {
    if (i) out += ", ";
    out += quote(keys[i]);
  }
  if (keys.size() > kShown) out += fmt::format(", ... {} more", keys.size() - kShown);
  out += "]";
  return out;
}

}  // namespace

std::chrono::milliseconds connect_backoff(unsigned attempt, std::mt19937& rng) {
  constexpr long long kFirst = 10, kMax = 1000;
  long long base = kMax;
  if (attempt < 7) base = std::min(kMax, kFirst << attempt);  // 10, 20, ... 640, then 1000
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return milliseconds(std::max<long long>(1, static_cast<long long>(static_cast<double>(base) * jitter(rng))));
}

class StoreClient::Impl {
 public:
  explicit Impl(ClientOptions options)
      : options_(std::move(options)),
        endpoint_(fmt::format("{}:{}", options_.host, options_.port)),
        rng_(std::random_device{}()) {
    connect();
  }

  const ClientOptions& options() const { return options_; }
  const std::string& endpoint() const { return endpoint_; }
  std::uint64_t connections_made() const { return connections_made_.load(); }
  void set_timeout(milliseconds t) {
    std::lock_guard lock(mu_);
    options_.timeout = t;
  }

  // ---- operations ----

  void set(std::string_view key, std::string_view value) {
    Call call(*this, Op::Set, quote(key));
    Request req{Op::Set, {std::string(key)}, {std::string(value)}};
    send_request(call, req);
  }

  std::string get(std::string_view key) {
    Call call(*this, Op::Get, quote(key));
    std::vector<std::string> keys{std::string(key)};
    wait_keys(call, keys, call.deadline);
    Request req{Op::Get, std::move(keys), {}};
    send_request(call, req);
    return read_bytes(call);
  }

  std::int64_t add(std::string_view key, std::int64_t delta) {
    Call call(*this, Op::Add, quote(key));
    Request req{Op::Add, {std::string(key)}, {}};
    req.number = delta;
    send_request(call, req);
    return read_i64(call);
  }

  std::string compare_set(std::string_view key, std::string_view expected, std::string_view desired) {
    Call call(*this, Op::CompareSet, quote(key));
    Request req{Op::CompareSet, {std::string(key)}, {std::string(expected), std::string(desired)}};
    send_request(call, req);
    return read_bytes(call);
  }

  bool check(const std::vector<std::string>& keys) {
    Call call(*this, Op::Check, describe_keys(keys));
    Request req{Op::Check, keys, {}};
    send_request(call, req);
    auto answer = read_u8(call);
    if (answer != kCheckReady && answer != kCheckNotReady)
      throw call.protocol(fmt::format("CHECK answered {}", answer));
    return answer == kCheckReady;
  }

  void wait(const std::vector<std::string>& keys, milliseconds timeout) {
    Call call(*this, Op::Wait, describe_keys(keys), timeout);
    wait_keys(call, keys, call.deadline);
  }

  std::int64_t num_keys() {
    Call call(*this, Op::NumKeys, "");
    send_request(call, Request{Op::NumKeys, {}, {}});
    return read_i64(call);
  }

  bool delete_key(std::string_view key) {
    Call call(*this, Op::DeleteKey, quote(key));
    send_request(call, Request{Op::DeleteKey, {std::string(key)}, {}});
    return read_i64(call) == 1;
  }

  void append(std::string_view key, std::string_view value) {
    Call call(*this, Op::Append, quote(key));
    // torch's base Store emulates APPEND with a COMPARE_SET loop, which cannot tell "stored" from
    // "someone else's value happens to equal ours"; refusing is better than appending wrongly.
    require(call, Op::Append);
    send_request(call, Request{Op::Append, {std::string(key)}, {std::string(value)}});
  }

  std::vector<std::string> multi_get(const std::vector<std::string>& keys) {
    Call call(*this, Op::MultiGet, describe_keys(keys));
    wait_keys(call, keys, call.deadline);
    std::vector<std::string> values;
    values.reserve(keys.size());
    if (has(Op::MultiGet)) {
      send_request(call, Request{Op::MultiGet, keys, {}});
      for (std::size_t i = 0; i < keys.size(); ++i) values.push_back(read_bytes(call));
    } else {
      for (const auto& key : keys) {
        send_request(call, Request{Op::Get, {key}, {}});
        values.push_back(read_bytes(call));
      }
    }
    return values;
  }

  void multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
    if (keys.size() != values.size()) {
      throw std::invalid_argument(fmt::format("multi_set: {} keys but {} values", keys.size(), values.size()));
    }
    Call call(*this, Op::MultiSet, describe_keys(keys));
    if (has(Op::MultiSet)) {
      send_request(call, Request{Op::MultiSet, keys, values});
      return;
    }
    for (std::size_t i = 0; i < keys.size(); ++i) send_request(call, Request{Op::Set, {keys[i]}, {values[i]}});
  }

  std::chrono::microseconds ping() {
    Call call(*this, Op::Ping, "");
    require(call, Op::Ping);
    auto start = Clock::now();
    Request req{Op::Ping, {}, {}};
    req.u32 = nonce();
    send_request(call, req);
    auto echo = read_u32(call);
    if (echo != req.u32) throw call.protocol(fmt::format("PING nonce {} echoed as {}", req.u32, echo));
    return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  }

 private:
  // One call: holds the client's lock, knows its deadline and how to describe itself in errors.
  // Leaving a call by an exception closes the connection (its state is unknown); the next call
  // reconnects.
  struct Call {
    Call(Impl& impl, Op op_, std::string keys_, std::optional<milliseconds> timeout_ = std::nullopt)
        : self(impl),
          lock(impl.mu_),
          op(op_),
          keys(std::move(keys_)),
          timeout(std::max(timeout_.value_or(impl.options_.timeout), milliseconds(1))),
          start(Clock::now()),
          deadline(start + timeout),
          uncaught(std::uncaught_exceptions()) {
      if (self.sock_ && !self.idle_connection_healthy()) self.sock_.close();
      if (!self.sock_) self.connect();
    }
    ~Call() {
      // Bytes went out and the exchange did not finish: a late reply would desync the next call.
      if (sent && std::uncaught_exceptions() > uncaught) self.sock_.close();
    }
    Call(const Call&) = delete;
    Call& operator=(const Call&) = delete;

    std::string what() const {
      return keys.empty() ? fmt::format("{}", op_name(op)) : fmt::format("{} of {}", op_name(op), keys);
    }
    StoreTimeout timed_out(std::string_view waiting_for) const {
      return StoreTimeout(fmt::format("{} on store {} timed out after {} ms (timeout {} ms) waiting for {}", what(),
                                      self.endpoint_, ms_since(start), timeout.count(), waiting_for));
    }
    StoreConnectionError broken(std::string_view how) const {
      return StoreConnectionError(fmt::format("{} on store {} failed after {} ms: {}; the next call reconnects", what(),
                                              self.endpoint_, ms_since(start), how));
    }
    StoreProtocolError protocol(std::string_view how) const {
      return StoreProtocolError(fmt::format("{} on store {}: {} (is it a server speaking {}?)", what(), self.endpoint_,
                                            how, dialect_name(self.options_.dialect)));
    }

    Impl& self;
    std::unique_lock<std::mutex> lock;
    Op op;
    std::string keys;
    milliseconds timeout;
    Clock::time_point start;
    Clock::time_point deadline;
    int uncaught;
    bool sent = false;
  };

  // Between calls nothing may arrive: readable means the server closed the connection (it
  // restarted, or dropped us) or sent bytes nobody asked for. Either way this connection cannot
  // carry the next request; finding out now, rather than after sending, keeps a SET (which has
  // no reply) from vanishing into a dead socket.
  bool idle_connection_healthy() {
    if (sock_.idle_and_open()) return true;
    spdlog::debug("store client: connection to {} closed or out of step between calls; reconnecting", endpoint_);
    return false;
  }

  static std::uint32_t nonce() { return static_cast<std::uint32_t>(platform::current_pid()); }

  bool has(Op op) const { return encode_opcode(options_.dialect, op).has_value(); }

  void require(const Call& call, Op op) const {
    if (!has(op)) {
      throw StoreUnsupported(fmt::format("{} on store {}: {} does not exist in {}", call.what(), endpoint_, op_name(op),
                                         dialect_name(options_.dialect)));
    }
  }

  // ---- connection ----

  void connect() {
    auto start = Clock::now();
    auto deadline = start + options_.connect_timeout;
    std::string last_error;
    for (unsigned attempt = 0;; ++attempt) {
      TcpClient sock = try_connect(deadline, last_error);
      if (sock) {
        sock_ = std::move(sock);
        ++connections_made_;
        spdlog::debug("store client connected to {} ({}) after {} attempt(s), {} ms", endpoint_,
                      dialect_name(options_.dialect), attempt + 1, ms_since(start));
        return;
      }
      auto now = Clock::now();
      if (now >= deadline) {
        throw StoreConnectError(
            fmt::format("could not connect to store {} ({}) within the connect timeout of {} ms ({} attempts, {} ms "
                        "waited); last error: {}",
                        endpoint_, dialect_name(options_.dialect), options_.connect_timeout.count(), attempt + 1,
                        ms_since(start), last_error));
      }
      auto pause = std::min<Clock::duration>(connect_backoff(attempt, rng_), deadline - now);
      spdlog::debug("store client: {} not reachable ({}), retrying in {} ms", endpoint_, last_error,
                    std::chrono::duration_cast<milliseconds>(pause).count());
      std::this_thread::sleep_for(pause);
    }
  }

  // Resolves and tries every address once; then the dialect-C handshake. Throws only for errors
  // that waiting will not fix (a server that echoes the wrong nonce).
  TcpClient try_connect(Clock::time_point deadline, std::string& why) {
    // Name resolution can fail transiently while a cluster comes up; it is retried like refusals.
    for (const auto& address : platform::resolve_tcp(options_.host, options_.port, why)) {
      // One non-blocking connect per address; refusals and unreachable hosts are the normal case
      // while a server starts.
      TcpClient sock;
      if (!sock.connect(address, deadline, why)) continue;
      if (options_.dialect != Dialect::C || handshake(sock, deadline, why)) return sock;
    }
    return {};
  }

  // VALIDATE then PING with our pid, as torch >= 2.4 does; a server that is not dialect C never
  // answers the PING (torch 1.13 reads VALIDATE as a SET with a 1 GB key), so the deadline ends it.
  bool handshake(TcpClient& sock, Clock::time_point deadline, std::string& why) {
    std::string out;
    Request validate{Op::Validate, {}, {}};
    validate.u32 = kValidateMagic;
    encode_request(Dialect::C, validate, out);
    Request ping{Op::Ping, {}, {}};
    ping.u32 = nonce();
    encode_request(Dialect::C, ping, out);
    char echo[4];
    IoResult r = sock.send_all(out, deadline);
    if (r == IoResult::Ok) r = sock.recv_exact(echo, sizeof(echo), deadline);
    switch (r) {
      case IoResult::Ok: break;
      case IoResult::Timeout:
        why =
            "connected, but no answer to the VALIDATE/PING handshake (a torch 1.13 server? it speaks the torch "
            "1.13/2.0 protocol, which has no handshake)";
        return false;
      case IoResult::Closed: why = "the server closed the connection during the handshake"; return false;
      case IoResult::Error: why = "handshake: " + sock.last_error_text(); return false;
    }
    if (get_u32(echo) != ping.u32) {
      throw StoreProtocolError(fmt::format("store {} echoed PING nonce {} as {}: not a TCPStore server?", endpoint_,
                                           ping.u32, get_u32(echo)));
    }
    return true;
  }

  // ---- bytes ----

  void send_request(Call& call, const Request& req) {
    out_.clear();
    try {
      encode_request(options_.dialect, req, out_);
    } catch (const std::invalid_argument&) {
      require(call, req.op);
      throw;
    }
    call.sent = true;
    check_io(call, sock_.send_all(out_, call.deadline), "the request to be sent");
  }

  void check_io(const Call& call, IoResult r, std::string_view waiting_for) {
    switch (r) {
      case IoResult::Ok: return;
      case IoResult::Timeout: throw call.timed_out(waiting_for);
      case IoResult::Closed:
        throw call.broken(sock_.last_error_is_reset()
                              ? fmt::format("connection lost ({})", sock_.last_error_text())
                              : std::string("the server closed the connection (a rejected request or a restart)"));
      case IoResult::Error: throw call.broken(sock_.last_error_text());
    }
  }

  void read_raw(Call& call, char* p, std::size_t n) {
    check_io(call, sock_.recv_exact(p, n, call.deadline), "the reply");
  }
  std::uint8_t read_u8(Call& call) {
    char b = 0;
    read_raw(call, &b, 1);
    return static_cast<std::uint8_t>(b);
  }
  std::uint32_t read_u32(Call& call) {
    char b[4];
    read_raw(call, b, 4);
    return get_u32(b);
  }
  std::int64_t read_i64(Call& call) {
    char b[8];
    read_raw(call, b, 8);
    return static_cast<std::int64_t>(get_u64(b));
  }
  std::string read_bytes(Call& call) {
    char b[8];
    read_raw(call, b, 8);
    auto len = get_u64(b);
    if (len > options_.max_reply_bytes) {
      throw call.protocol(
          fmt::format("reply value of {} bytes exceeds the client's limit of {} bytes", len, options_.max_reply_bytes));
    }
    std::string value(static_cast<std::size_t>(len), '\0');
    if (len) read_raw(call, value.data(), value.size());
    return value;
  }

  // ---- waiting ----

  void wait_keys(Call& call, const std::vector<std::string>& keys, Clock::time_point deadline) {
    send_request(call, Request{Op::Wait, keys, {}});
    char b = 0;
    auto r = sock_.recv_exact(&b, 1, deadline);
    if (r == IoResult::Ok) {
      if (static_cast<std::uint8_t>(b) != kStopWaiting)
        throw call.protocol(fmt::format("WAIT answered {}", static_cast<std::uint8_t>(b)));
      return;
    }
    if (r != IoResult::Timeout) check_io(call, r, "the keys to be set");
    if (!has(Op::CancelWait)) {
      // torch 1.13 has no CANCEL_WAIT and its server keeps the registration: the STOP_WAITING it
      // sends when a key appears later would be read as the next reply. Closing the connection
      // (Call's destructor, on this throw) drops the registration with it.
      throw call.timed_out("the keys to be set (connection closed; the next call reconnects)");
    }
    // CANCEL_WAIT is answered at once; a STOP_WAITING already on its way comes first (spec §5.6).
    auto cancel_deadline = Clock::now() + std::min(options_.timeout, milliseconds(10000));
    out_.clear();
    encode_request(options_.dialect, Request{Op::CancelWait, {}, {}}, out_);
    check_io(call, sock_.send_all(out_, cancel_deadline), "CANCEL_WAIT to be sent");
    check_io(call, sock_.recv_exact(&b, 1, cancel_deadline), "the answer to CANCEL_WAIT");
    auto first = static_cast<std::uint8_t>(b);
    if (first == kWaitCanceled) {
      // The exchange is complete: the connection is in step and stays (no reconnect per chunk).
      call.sent = false;
      throw call.timed_out("the keys to be set");
    }
    if (first != kStopWaiting) throw call.protocol(fmt::format("CANCEL_WAIT answered {}", first));
    check_io(call, sock_.recv_exact(&b, 1, cancel_deadline), "the answer to CANCEL_WAIT");
    if (static_cast<std::uint8_t>(b) != kWaitCanceled) {
      throw call.protocol(fmt::format("CANCEL_WAIT after STOP_WAITING answered {}", static_cast<std::uint8_t>(b)));
    }
    // The keys arrived just as we gave up: the wait succeeded (torch raises here anyway).
  }

  ClientOptions options_;
  std::string endpoint_;
  std::mt19937 rng_;
  std::mutex mu_;
  TcpClient sock_;
  std::atomic<std::uint64_t> connections_made_{0};
  std::string out_;  // request being encoded
};

StoreClient::StoreClient(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
StoreClient::~StoreClient() = default;
StoreClient::StoreClient(StoreClient&&) noexcept = default;
StoreClient& StoreClient::operator=(StoreClient&&) noexcept = default;

const ClientOptions& StoreClient::options() const { return impl_->options(); }
std::string StoreClient::endpoint() const { return impl_->endpoint(); }
void StoreClient::set_timeout(std::chrono::milliseconds timeout) { impl_->set_timeout(timeout); }
void StoreClient::set(std::string_view key, std::string_view value) { impl_->set(key, value); }
std::string StoreClient::get(std::string_view key) { return impl_->get(key); }
std::int64_t StoreClient::add(std::string_view key, std::int64_t delta) { return impl_->add(key, delta); }
std::string StoreClient::compare_set(std::string_view key, std::string_view expected, std::string_view desired) {
  return impl_->compare_set(key, expected, desired);
}
bool StoreClient::check(const std::vector<std::string>& keys) { return impl_->check(keys); }
void StoreClient::wait(const std::vector<std::string>& keys) { impl_->wait(keys, impl_->options().timeout); }
void StoreClient::wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) {
  impl_->wait(keys, timeout);
}
std::int64_t StoreClient::num_keys() { return impl_->num_keys(); }
bool StoreClient::delete_key(std::string_view key) { return impl_->delete_key(key); }
void StoreClient::append(std::string_view key, std::string_view value) { impl_->append(key, value); }
std::vector<std::string> StoreClient::multi_get(const std::vector<std::string>& keys) { return impl_->multi_get(keys); }
void StoreClient::multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  impl_->multi_set(keys, values);
}
std::chrono::microseconds StoreClient::ping() { return impl_->ping(); }
std::uint64_t StoreClient::connections_made() const { return impl_->connections_made(); }

}  // namespace ddp::store
