#include "store/server.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <optional>
#include <unordered_map>
#include <vector>

#include "common/error.hpp"
#include "platform/listener.hpp"
#include "platform/proc.hpp"
#include "store/codec.hpp"

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace ddp::store {
namespace {

int listen_backlog() {
  std::ifstream in("/proc/sys/net/core/somaxconn");
  int n = 0;
  if (in >> n && n > 0) return n;
  return 4096;
}

// Stop reading a connection whose unsent replies pile up past this (a client that pipelines
// requests without reading answers); reading resumes once they drain.
constexpr std::size_t kOutputHighWater = 4u << 20;
// A connection with this much unsent and more coming is not reading at all: it is dropped. Its
// own requests stop being read at the high water, but other clients' writes keep adding to a
// WATCH_KEY connection's notifications (old and new value each). A single reply into an empty
// queue is always taken, however large (LIST_KEYS of a big store).
constexpr std::size_t kOutputLimit = 64u << 20;
// Each connection reads into its own buffer (an armed async_receive needs one): small at first,
// since thousands of mostly idle rendezvous connections each hold one, doubled after every read
// that fills it (a client sending big values) up to kReadChunk.
constexpr std::size_t kFirstReadBuffer = 1024;
constexpr std::size_t kReadChunk = 64u << 10;

}  // namespace

class StoreServer::Impl : public std::enable_shared_from_this<StoreServer::Impl>, public Outbox {
 public:
  struct Session {
    explicit Session(tcp::socket s) : socket(std::move(s)) {}
    tcp::socket socket;
    ConnId id = 0;
    bool sniffed = false;
    Dialect dialect = Dialect::A;
    std::vector<char> rbuf = std::vector<char>(kFirstReadBuffer);  // where the armed receive lands
    std::optional<RequestParser> parser;                           // once the dialect is known: the request in progress
    std::size_t pending = 0;                                       // its bytes, as counted in pending_total_
    std::string in;           // bytes received but not yet parsed: a VALIDATE prefix, or what a pause left
    std::string out;          // replies not yet written
    bool writing = false;     // waiting for the socket to become writable
    bool reading = false;     // a read wait is armed
    bool dirty = false;       // in the flush list
    bool closing = false;     // close after `out` drains
    bool paused = false;      // `in` holds requests left unparsed while `out` was over the high water
    bool overflowed = false;  // `out` passed kOutputLimit: dropped once the current request is done
    tcp::endpoint remote;     // from accept(); formatted only when a warning needs it
    std::string peer;
  };
  using SessionPtr = std::shared_ptr<Session>;

  Impl(asio::io_context& io, ServerConfig config)
      : io_(io), config_(std::move(config)), state_(config_.limits, config_.state), acceptor_(io), retry_(io) {
    bind_and_listen();
  }

  void bind_and_listen() {
    tcp::resolver resolver(io_);
    boost::system::error_code ec;
    auto results = resolver.resolve(config_.host, std::to_string(config_.port),
                                    tcp::resolver::passive | tcp::resolver::numeric_service, ec);
    if (ec || results.empty()) {
      throw Error(
          fmt::format("cannot resolve store address '{}': {}. Give a host name or an IP address "
                      "({}).",
                      config_.host, ec ? ec.message() : "no addresses", config_.bad_host_advice));
    }
    tcp::endpoint ep = results.begin()->endpoint();
    acceptor_.open(ep.protocol());
    platform::prepare_listener(acceptor_);
    acceptor_.bind(ep, ec);
    if (ec == asio::error::address_in_use) {
      auto holders = proc::listeners_on_port(config_.port);
      throw Error(fmt::format("cannot listen on {}:{}: the port is already in use by {}. Stop that process, or {}.",
                              config_.host, config_.port, proc::describe(holders), config_.busy_port_advice));
    }
    if (ec) {
      throw Error(fmt::format("cannot listen on {}:{}: {}", config_.host, config_.port, ec.message()));
    }
    acceptor_.listen(listen_backlog());
    acceptor_.non_blocking(true);
    // Linux copies TCP_NODELAY from the listening socket into each accepted one, which saves a
    // setsockopt per connection (a syscall costs ~1.5 us on the VMs we run on); on_accepted checks
    // the first connection and sets it per socket if this kernel does not copy it.
    acceptor_.set_option(tcp::no_delay(true), ec);
    spdlog::debug("store listening on {}:{} (backlog {})", config_.host, port(), listen_backlog());
  }

  std::uint16_t port() const { return acceptor_.local_endpoint().port(); }

  void start() { arm_accept(); }

  void stop() {
    stopped_ = true;
    boost::system::error_code ec;
    acceptor_.close(ec);
    retry_.cancel();
    for (auto& [id, s] : sessions_) s->socket.close(ec);
    sessions_.clear();
  }

  // ---- accepting ----
  // An armed accept takes the first connection of a burst; accept_backlog takes the rest with
  // non-blocking accepts (one completion can stand for thousands). Not async_wait(wait_read) on the
  // listener: Windows' IOCP has no readiness wait for a listening socket.
  void arm_accept() {
    if (stopped_) return;
    auto peer = std::make_shared<std::pair<tcp::socket, tcp::endpoint>>(tcp::socket(io_), tcp::endpoint());
    acceptor_.async_accept(peer->first, peer->second, [self = shared_from_this(), peer](boost::system::error_code ec) {
      if (ec == asio::error::operation_aborted || self->stopped_) return;
      if (self->accepted(ec, std::move(peer->first), peer->second)) self->accept_backlog();
    });
  }

  void accept_backlog() {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket socket(io_);
      tcp::endpoint remote;
      acceptor_.accept(socket, remote, ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) break;
      if (!accepted(ec, std::move(socket), remote)) return;
    }
    arm_accept();
  }

  // One accept's outcome; false when accepting must pause (out of descriptors: a retry is armed) or stop.
  bool accepted(boost::system::error_code ec, tcp::socket socket, const tcp::endpoint& remote) {
    if (ec == asio::error::no_descriptors || ec.value() == ENFILE || ec == asio::error::no_buffer_space ||
        ec == asio::error::no_memory) {
      // Out of file descriptors: retry shortly instead of spinning on a readable listener.
      warn_rate_limited(
          fmt::format("cannot accept more connections ({}); {} open. Raise the open-file "
                      "limit (ulimit -n).",
                      ec.message(), sessions_.size()));
      retry_.expires_after(std::chrono::milliseconds(50));
      retry_.async_wait([self = shared_from_this()](boost::system::error_code e) {
        if (!e) self->arm_accept();
      });
      return false;
    }
    if (ec) {
      if (stopped_) return false;
      spdlog::warn("accept failed: {}", ec.message());
      return true;
    }
    on_accepted(std::move(socket), remote);
    return true;
  }

  void on_accepted(tcp::socket socket, const tcp::endpoint& remote) {
    stats_.accepted++;
    if (sessions_.size() >= config_.limits.max_connections) {
      stats_.refused_over_limit++;
      boost::system::error_code ec;
      warn_rate_limited(fmt::format("refusing a connection from {}:{}: {} connections open, the limit is {}{}",
                                    remote.address().to_string(), remote.port(), sessions_.size(),
                                    config_.limits.max_connections, config_.connection_limit_advice));
      socket.close(ec);
      return;
    }
    boost::system::error_code ec;
    if (!nodelay_inherited_) {
      tcp::no_delay inherited;
      socket.get_option(inherited, ec);
      nodelay_inherited_ = !ec && inherited.value();
    }
    if (!*nodelay_inherited_) socket.set_option(tcp::no_delay(true), ec);
    socket.non_blocking(true, ec);
    auto s = std::make_shared<Session>(std::move(socket));
    s->id = ++next_id_;
    s->remote = remote;
    sessions_.emplace(s->id, s);
    spdlog::trace("connection {} accepted", s->id);
    arm_read(s);
  }

  // ---- reading ----
  // An armed async_receive, not async_wait + read_some: Asio re-arms a wait with an epoll_ctl
  // every time, while a receive that found the socket drained is just queued and performed by the
  // reactor when data arrives (one recv per arrival, no extra syscalls). Measured: 5 epoll_ctl per
  // rendezvous connection before, 2 (add, remove) after.
  void arm_read(const SessionPtr& s) {
    if (s->reading || s->closing || stopped_) return;
    s->reading = true;
    s->socket.async_receive(asio::buffer(s->rbuf),
                            [self = shared_from_this(), s](boost::system::error_code ec, std::size_t n) {
                              s->reading = false;
                              if (ec == asio::error::operation_aborted) return;  // closed under us
                              self->read_done(s, ec, n);
                            });
  }

  void read_done(const SessionPtr& s, boost::system::error_code ec, std::size_t n) {
    if (ec) {  // EOF or reset: the client is gone
      if ((!s->in.empty() || s->pending > 0) && !s->closing) {
        // A client killed mid-send (1.13 writes one request in many pieces) or a broken one.
        spdlog::warn("store connection {} from {} closed in the middle of a request ({} bytes of it received)", s->id,
                     peer_of(*s), s->in.size() + s->pending);
      }
      drop(s);
      flush_dirty();
      return;
    }
    consume(s, std::string_view(s->rbuf.data(), n));
    if (n == s->rbuf.size() && s->rbuf.size() < kReadChunk) s->rbuf.resize(s->rbuf.size() * 2);
    flush_dirty();
    resume(s);
  }

  // Reads again once the replies are under the high water, first parsing what consume() left
  // unparsed when they were not: those requests may be all the client sends before it reads.
  void resume(const SessionPtr& s) {
    while (s->paused && !s->closing && s->out.size() < kOutputHighWater) {
      s->paused = false;
      consume(s, {});
      flush_dirty();
    }
    if (!s->closing && s->out.size() < kOutputHighWater) arm_read(s);
  }

  // Feeds what arrived to the connection's parser, which keeps a request in progress itself and
  // resumes where it stopped: each byte is examined once, however many reads a big request takes
  // (re-parsing from the request's first byte on every read made a 50 MB request quadratic and
  // stalled every other client meanwhile).
  void consume(const SessionPtr& s, std::string_view data) {
    // Parse straight from the read chunk when nothing is held back (the common case).
    std::string_view buf = data;
    if (!s->in.empty()) {
      s->in.append(data);
      buf = s->in;
    }
    std::size_t used = 0;
    if (!s->sniffed) {
      Sniff sniff = sniff_dialect(buf, config_.legacy_dialect);
      if (!sniff.decided) {
        if (s->in.empty()) s->in.assign(data);
        return;
      }
      s->sniffed = true;
      s->dialect = sniff.dialect;
      s->parser.emplace(s->dialect, config_.limits);
      if (s->dialect == Dialect::C) used = 5;  // VALIDATE consumed, no reply
      state_.connect(s->id, s->dialect);
      spdlog::trace("connection {} speaks {}", s->id, dialect_name(s->dialect));
    }
    while (used < buf.size() && !s->closing) {
      if (s->out.size() >= kOutputHighWater) {
        // A client pipelining requests without reading the replies: one read of small GETs
        // could otherwise queue thousands of values of up to 8 MiB. Parse the rest once the
        // replies drain (resume()).
        s->paused = true;
        break;
      }
      ParseResult r = s->parser->feed(buf.substr(used), request_);
      count_pending(*s);
      if (r.status == ParseStatus::Error) {
        close(s->id, r.error);
        break;
      }
      if (r.status == ParseStatus::NeedMore) {
        used = buf.size();  // all taken into the parser
        if (pending_total_ > config_.limits.max_pending_bytes) {
          close(s->id, fmt::format("its unfinished request holds {} bytes, and the unfinished requests of all "
                                   "connections together passed the limit of {} bytes{}",
                                   s->pending, config_.limits.max_pending_bytes, config_.pending_limit_advice));
        }
        break;
      }
      used += r.consumed;
      stats_.requests++;
      state_.handle(s->id, request_, *this);
      if (!overflowed_.empty()) drop_overflowed();
    }
    if (s->closing) {
      std::string().swap(s->in);
      return;
    }
    if (buf.data() == s->in.data()) {
      s->in.erase(0, used);
    } else if (used < buf.size()) {
      s->in.assign(buf.substr(used));
    }
  }

  // ---- Outbox ----
  void send(ConnId conn, std::string_view bytes) override {
    auto it = sessions_.find(conn);
    if (it == sessions_.end()) return;
    auto& s = it->second;
    if (s->overflowed) return;  // about to be dropped
    if (!s->out.empty() && s->out.size() + bytes.size() > kOutputLimit) {
      // Dropped after the state is done with this request: it may be iterating the watchers.
      s->overflowed = true;
      overflowed_.push_back(s);
      return;
    }
    s->out.append(bytes);
    if (!s->dirty) {
      s->dirty = true;
      dirty_.push_back(s);
    }
  }

  void close(ConnId conn, std::string_view reason) override {
    auto it = sessions_.find(conn);
    if (it == sessions_.end()) return;
    auto& s = it->second;
    if (s->closing) return;
    stats_.closed_for_violation++;
    spdlog::warn("closing store connection {} from {}: {}", conn, peer_of(*s), reason);
    s->closing = true;
    release_pending(*s);
    state_.disconnect(conn);
    if (!s->dirty) {
      s->dirty = true;
      dirty_.push_back(s);
    }
  }

  void drop_overflowed() {
    auto list = std::move(overflowed_);
    overflowed_.clear();
    for (auto& s : list) {
      stats_.closed_for_violation++;
      spdlog::warn(
          "closing store connection {} from {}: it is not reading its replies ({} bytes unsent, the "
          "limit is {})",
          s->id, peer_of(*s), s->out.size(), kOutputLimit);
      s->closing = true;  // if it is the requester, stop parsing its requests
      std::string().swap(s->out);
      drop(s);
    }
  }

  // ---- writing ----
  void flush_dirty() {
    auto list = std::move(dirty_);
    dirty_.clear();
    for (auto& s : list) {
      s->dirty = false;
      flush(s);
    }
  }

  void flush(const SessionPtr& s) {
    while (!s->out.empty() && !s->writing) {
      boost::system::error_code ec;
      std::size_t n = s->socket.write_some(asio::buffer(s->out), ec);
      if ((ec == asio::error::would_block || ec == asio::error::try_again) && s->closing) {
        break;  // a violator that does not read gets what fits in its socket buffer, then the close
      }
      if (ec == asio::error::would_block || ec == asio::error::try_again) {
        s->writing = true;
        s->socket.async_wait(tcp::socket::wait_write, [self = shared_from_this(), s](boost::system::error_code e) {
          s->writing = false;
          if (e) return;
          self->flush(s);
          self->resume(s);
        });
        return;
      }
      if (ec) {
        drop(s);
        return;
      }
      s->out.erase(0, n);
    }
    if (s->closing) drop(s);
  }

  // The parser's bytes of an unfinished request count towards max_pending_bytes until it completes.
  void count_pending(Session& s) {
    pending_total_ -= s.pending;
    s.pending = s.parser ? s.parser->pending_bytes() : 0;
    pending_total_ += s.pending;
  }

  void release_pending(Session& s) {
    s.parser.reset();  // frees the request in progress now, not when the last handler lets go
    count_pending(s);
  }

  void drop(const SessionPtr& s) {
    if (sessions_.erase(s->id) == 0) return;
    s->closing = true;  // gone: resume() and consume() must not hand its requests to the state
    release_pending(*s);
    state_.disconnect(s->id);
    boost::system::error_code ec;
    s->socket.close(ec);
    spdlog::trace("connection {} closed", s->id);
  }

  std::string peer_of(Session& s) {
    if (s.peer.empty()) s.peer = fmt::format("{}:{}", s.remote.address().to_string(), s.remote.port());
    return s.peer;
  }

  void warn_rate_limited(const std::string& msg) {
    auto now = std::chrono::steady_clock::now();
    if (now - last_warning_ < std::chrono::seconds(1)) return;
    last_warning_ = now;
    spdlog::warn("{}", msg);
  }

  asio::io_context& io_;
  ServerConfig config_;
  StoreState state_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_;
  std::unordered_map<ConnId, SessionPtr> sessions_;
  std::vector<SessionPtr> dirty_;
  std::vector<SessionPtr> overflowed_;  // sessions to drop once the current request is handled
  Request request_;
  ConnId next_id_ = 0;
  std::size_t pending_total_ = 0;          // bytes of unfinished requests, all connections together
  std::optional<bool> nodelay_inherited_;  // known after the first accept
  bool stopped_ = false;
  ServerStats stats_;
  std::chrono::steady_clock::time_point last_warning_{};
};

StoreServer::StoreServer(asio::io_context& io, ServerConfig config)
    : impl_(std::make_shared<Impl>(io, std::move(config))) {}

StoreServer::~StoreServer() { impl_->stop(); }

std::uint16_t StoreServer::port() const { return impl_->port(); }
std::string StoreServer::host() const { return impl_->config_.host; }
void StoreServer::start() { impl_->start(); }
void StoreServer::stop() { impl_->stop(); }
void StoreServer::reset_state() { impl_->state_.reset(); }
void StoreServer::set_key_observer(StoreState::KeyObserver observer) {
  impl_->state_.set_key_observer(std::move(observer));
}
void StoreServer::set_connection_observer(StoreState::ConnectionObserver observer) {
  impl_->state_.set_connection_observer(std::move(observer));
}
const StoreState& StoreServer::state() const { return impl_->state_; }

void StoreServer::set_local(std::string key, std::string value) {
  // Connection id 0 is never a session's (ids start at 1): its replies go nowhere.
  constexpr ConnId kLocal = 0;
  auto& st = impl_->state_;
  st.connect(kLocal, Dialect::C);
  Request req{Op::Set, {std::move(key)}, {std::move(value)}};
  st.handle(kLocal, req, *impl_);
  impl_->flush_dirty();
}

ServerStats StoreServer::stats() const {
  ServerStats s = impl_->stats_;
  s.open = impl_->sessions_.size();
  s.pending_bytes = impl_->pending_total_;
  return s;
}

}  // namespace ddp::store
