// store_loadgen: load for a TCPStore server, spoken in dialect A (torch 1.13 numbering) with the
// project's own encoder. One thread and one edge-triggered epoll set drive every connection, so
// the generator costs a few syscalls per request and is not what a run measures.
//
//   rendezvous --ranks N   N connections each SET their own key, ADD a shared counter and WAIT on
//                          a release key; the connection whose ADD returns N sets the release key.
//                          Time: from the first connect until every connection has STOP_WAITING.
//   throughput             C connections each run SET k v + GET k (then more GETs, --gets-per-set)
//                          in a closed loop for a fixed duration; ops/s and round latency.
//
// Prints one result line (text, or JSON with --json). Exit status 0 only when the scenario
// completed with zero connection errors.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "platform/proc.hpp"
#include "store/codec.hpp"

namespace {

using namespace ddp::store;
using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU seconds (user + system) this process has used: shows whether the generator kept up.
double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto sec = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6; };
  return sec(ru.ru_utime) + sec(ru.ru_stime);
}

struct CommonOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  double timeout_s = 60;  // the whole scenario, connects included
  double stall_s = 3;     // give up this long after the last progress once a connection failed
  bool json = false;
  int source_addrs = 0;  // 0: one loopback source address per 2048 connections
};

// Connection failures by kind. A torch client dies on any of them, so any is a failed run.
struct Errors {
  std::uint64_t connect = 0;   // socket()/connect() failed at once (ports, descriptors)
  std::uint64_t refused = 0;   // ECONNREFUSED
  std::uint64_t reset = 0;     // ECONNRESET / EPIPE: the server reset or dropped the connection
  std::uint64_t eof = 0;       // the server closed the connection before the scenario was done
  std::uint64_t protocol = 0;  // a reply that is not what the protocol says
  std::uint64_t other = 0;

  std::uint64_t total() const { return connect + refused + reset + eof + protocol + other; }
  void count_errno(int e) {
    if (e == ECONNREFUSED) {
      refused++;
    } else if (e == ECONNRESET || e == EPIPE) {
      reset++;
    } else {
      other++;
    }
  }
  std::string json() const {
    return fmt::format(R"("errors":{},"connect_errors":{},"refused":{},"resets":{},"eof":{},"protocol_errors":{},)"
                       R"("other_errors":{})",
                       total(), connect, refused, reset, eof, protocol, other);
  }
  std::string text() const {
    return fmt::format("errors={} (connect={} refused={} reset={} eof={} protocol={} other={})", total(), connect,
                       refused, reset, eof, protocol, other);
  }
};

std::string json_escape(std::string_view s) {
  std::string out;
  for (char ch : s) {
    if (static_cast<unsigned char>(ch) < 0x20) continue;
    if (ch == '"' || ch == '\\') out.push_back('\\');
    out.push_back(ch);
  }
  return out;
}

// An encoded request (or several back to back), the way a client hands it to send().
std::string encode(std::initializer_list<Request> reqs) {
  std::string out;
  for (const auto& r : reqs) encode_request(Dialect::A, r, out);
  return out;
}

Request make(Op op, std::vector<std::string> keys, std::vector<std::string> values = {}, std::int64_t number = 0) {
  Request r;
  r.op = op;
  r.keys = std::move(keys);
  r.values = std::move(values);
  r.number = number;
  return r;
}

sockaddr_in resolve(const CommonOptions& o) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(o.port);
  if (inet_pton(AF_INET, o.host.c_str(), &addr.sin_addr) != 1) {
    throw CLI::ValidationError("--host", fmt::format("'{}' is not an IPv4 address", o.host));
  }
  return addr;
}

// The epoll set and the non-blocking socket calls every scenario uses.
//
// Source addresses: the kernel looks for a free ephemeral port for each connect() by probing
// ports of one parity (net.ipv4.ip_local_port_range, ~14k of them) whose 4-tuple is still
// unused; with thousands of connections to one server port from one address that search
// dominates, and past ~14k it spills into a slow second pass (a cliff in the generator that has
// nothing to do with the server). A loopback server is reachable from any 127.x.y.z, and each
// source address has its own 4-tuples, so connections are spread over several of them. Ranks of
// a real job come from many hosts, so this is also the more faithful picture.
class Net {
 public:
  Net(const sockaddr_in& addr, std::size_t connections, int source_addrs)
      : addr_(addr), ep_(epoll_create1(EPOLL_CLOEXEC)) {
    bool loopback = (ntohl(addr.sin_addr.s_addr) >> 24) == 127;
    std::size_t k = source_addrs > 0 ? static_cast<std::size_t>(source_addrs)
                                     : std::max<std::size_t>(1, (connections + kPerSource - 1) / kPerSource);
    if (!loopback || k <= 1) return;  // the kernel chooses the source address
    for (std::size_t i = 0; i < k; ++i) {
      sockaddr_in src{};
      src.sin_family = AF_INET;
      // 127.0.<i/250>.<2 + i%250>: never 127.0.0.1 itself, never a .0 or .255 host part.
      src.sin_addr.s_addr =
          htonl((127u << 24) | (static_cast<std::uint32_t>(i / 250) << 8) | static_cast<std::uint32_t>(2 + i % 250));
      sources_.push_back(src);
    }
  }
  // A socket with its connect under way, registered (edge-triggered: one epoll_ctl in its whole
  // life) with `tag` as its event data. -1 and errno when the kernel refused at once.
  int start_connect(std::uint64_t tag, bool nodelay) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (!sources_.empty()) {
      // The port is still chosen at connect() (IP_BIND_ADDRESS_NO_PORT), per 4-tuple.
      int one = 1;
      setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
      const sockaddr_in& src = sources_[tag % sources_.size()];
      if (bind(fd, reinterpret_cast<const sockaddr*>(&src), sizeof src) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
      }
    }
    if (nodelay) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    }
    if (connect(fd, reinterpret_cast<const sockaddr*>(&addr_), sizeof addr_) != 0 && errno != EINPROGRESS) {
      int e = errno;
      close(fd);
      errno = e;
      return -1;
    }
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
    ev.data.u64 = tag;
    epoll_ctl(ep_, EPOLL_CTL_ADD, fd, &ev);
    return fd;
  }

  // Waits at most `timeout_ms` (always bounded: every wait has a deadline).
  std::span<epoll_event> wait(int timeout_ms) {
    int n = epoll_wait(ep_, events_.data(), static_cast<int>(events_.size()), timeout_ms);
    if (n < 0) n = 0;  // EINTR: the caller's loop checks its deadline and comes back
    return {events_.data(), static_cast<std::size_t>(n)};
  }

 private:
  static constexpr std::size_t kPerSource = 2048;  // keeps each address's port search short
  sockaddr_in addr_;
  int ep_;
  std::vector<sockaddr_in> sources_;
  std::vector<epoll_event> events_ = std::vector<epoll_event>(4096);
};

int ms_until(Clock::time_point deadline, int cap_ms) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<long long>(ms + 1, 0, cap_ms));
}

// Writes what is left of `pending`; false on a connection error (errno set). EAGAIN leaves the
// rest for the next EPOLLOUT edge.
bool write_pending(int fd, std::string_view& pending) {
  while (!pending.empty()) {
    ssize_t n = send(fd, pending.data(), pending.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    pending.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// rendezvous

struct RendezvousOptions {
  int ranks = 1024;
  std::string prefix = "bench/";
  int window = 0;          // most connections not yet answered by the server; 0 = all at once
  int connect_batch = 64;  // connects issued between two looks at the replies
};

class Rendezvous {
 public:
  Rendezvous(const CommonOptions& common, const RendezvousOptions& opts)
      : common_(common), opts_(opts), net_(resolve(common), static_cast<std::size_t>(opts.ranks), common.source_addrs) {
    const auto n = static_cast<std::size_t>(opts.ranks);
    conns_.resize(n);
    counter_ = opts.prefix + "count";
    release_ = opts.prefix + "release";
    // Encoded before the clock starts: the generator's own work stays out of the measurement.
    hello_.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      hello_.push_back(encode({make(Op::Set, {fmt::format("{}rank/{}", opts.prefix, i)}, {fmt::format("{}", i)}),
                               make(Op::Add, {counter_}, {}, 1)}));
    }
    wait_ = encode({make(Op::Wait, {release_})});
    release_and_wait_ = encode({make(Op::Set, {release_}, {"1"}), make(Op::Wait, {release_})});
  }

  int run() {
    cpu_start_ = cpu_seconds();
    start_ = Clock::now();
    deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(common_.timeout_s));
    last_progress_ = start_;
    const std::size_t n = conns_.size();
    bool stalled = false;
    while (done_ + failed_ < n) {
      open_more();
      bool more_to_open = opened_ < n && (opts_.window == 0 || in_flight() < static_cast<std::size_t>(opts_.window));
      for (const epoll_event& ev : net_.wait(more_to_open ? 0 : ms_until(deadline_, 100))) on_event(ev);
      auto now = Clock::now();
      if (now >= deadline_) break;
      if (failed_ > 0 && seconds_between(last_progress_, now) > common_.stall_s) {
        stalled = true;
        break;
      }
    }
    end_ = Clock::now();
    cpu_ = cpu_seconds() - cpu_start_;
    report(stalled);
    for (auto& c : conns_) {
      if (c.fd >= 0) close(c.fd);
    }
    return done_ == n && errors_.total() == 0 ? 0 : 1;
  }

 private:
  enum class Phase : std::uint8_t { Idle, Connecting, AwaitAdd, AwaitStop, Done, Failed };
  struct Conn {
    int fd = -1;
    Phase phase = Phase::Idle;
    std::uint8_t rx_len = 0;
    char rx[8];
    std::string_view pending;  // request bytes the socket has not taken yet
  };

  std::size_t in_flight() const { return opened_ - answered_ - failed_before_answer_; }

  void open_more() {
    const std::size_t n = conns_.size();
    for (int k = 0; k < opts_.connect_batch && opened_ < n; ++k) {
      if (opts_.window > 0 && in_flight() >= static_cast<std::size_t>(opts_.window)) return;
      std::size_t i = opened_++;
      Conn& c = conns_[i];
      // No TCP_NODELAY: every request goes out in one send() after the previous reply (which
      // acknowledged everything), so Nagle never holds anything back; it would cost a syscall.
      c.fd = net_.start_connect(i, /*nodelay=*/false);
      if (c.fd < 0) {
        errors_.connect++;
        if (first_error_.empty()) first_error_ = fmt::format("connect: {}", std::strerror(errno));
        fail(c, /*answered=*/false);
        continue;
      }
      c.phase = Phase::Connecting;
      c.pending = hello_[i];
    }
  }

  void fail(Conn& c, bool answered) {
    c.phase = Phase::Failed;
    failed_++;
    if (!answered) failed_before_answer_++;
    if (c.fd >= 0) {
      close(c.fd);
      c.fd = -1;
    }
  }

  void fail_errno(Conn& c, int e, const char* what) {
    errors_.count_errno(e);
    if (first_error_.empty()) first_error_ = fmt::format("{}: {}", what, std::strerror(e));
    fail(c, c.phase == Phase::AwaitStop);
  }

  void on_event(const epoll_event& ev) {
    Conn& c = conns_[ev.data.u64];
    if (c.phase == Phase::Done || c.phase == Phase::Failed) return;
    if (c.phase == Phase::Connecting && ev.events & (EPOLLERR | EPOLLHUP)) {
      int err = 0;
      socklen_t len = sizeof err;
      getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
      return fail_errno(c, err ? err : ECONNRESET, "connect");
    }
    if (ev.events & EPOLLOUT && !c.pending.empty()) {
      if (c.phase == Phase::Connecting) {
        c.phase = Phase::AwaitAdd;
        connected_++;
        if (connected_ == conns_.size()) t_connected_ = Clock::now();
      }
      if (!write_pending(c.fd, c.pending)) return fail_errno(c, errno, "send");
    }
    if (ev.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) read_replies(c);
  }

  void read_replies(Conn& c) {
    for (;;) {
      char buf[16];
      ssize_t n = recv(c.fd, buf, sizeof buf, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        return fail_errno(c, errno, "recv");
      }
      if (n == 0) {
        errors_.eof++;
        if (first_error_.empty()) first_error_ = "the server closed a connection before its STOP_WAITING";
        return fail(c, c.phase == Phase::AwaitStop);
      }
      for (ssize_t i = 0; i < n; ++i) {
        if (!take_byte(c, buf[i])) return;
      }
      // A short read drained the socket; the next bytes raise a new edge.
      if (static_cast<std::size_t>(n) < sizeof buf || c.phase == Phase::Done) return;
    }
  }

  // Feeds one reply byte; false when the connection is finished (done or failed).
  bool take_byte(Conn& c, char byte) {
    if (c.phase == Phase::AwaitAdd) {
      c.rx[c.rx_len++] = byte;
      if (c.rx_len < 8) return true;
      c.rx_len = 0;
      auto value = static_cast<std::int64_t>(get_u64(c.rx));
      if (value < 1 || value > static_cast<std::int64_t>(conns_.size())) {
        return protocol_error(
            c, fmt::format("ADD returned {} (expected 1..{}; a reused --prefix?)", value, conns_.size()));
      }
      answered_++;
      progress();
      if (answered_ == conns_.size()) t_adds_ = Clock::now();
      c.phase = Phase::AwaitStop;
      if (value == static_cast<std::int64_t>(conns_.size())) {
        t_release_ = Clock::now();
        c.pending = release_and_wait_;
      } else {
        c.pending = wait_;
      }
      if (!write_pending(c.fd, c.pending)) {
        fail_errno(c, errno, "send");
        return false;
      }
      return true;
    }
    if (c.phase == Phase::AwaitStop) {
      if (byte != 0) return protocol_error(c, fmt::format("WAIT answered {} instead of STOP_WAITING", int(byte)));
      c.phase = Phase::Done;
      done_++;
      progress();
      return false;
    }
    return protocol_error(c, "bytes arrived before any request was sent");
  }

  bool protocol_error(Conn& c, std::string what) {
    errors_.protocol++;
    if (first_error_.empty()) first_error_ = std::move(what);
    fail(c, c.phase == Phase::AwaitStop);
    return false;
  }

  void progress() { last_progress_ = Clock::now(); }

  void report(bool stalled) {
    const std::size_t n = conns_.size();
    bool complete = done_ == n;
    auto rel = [&](Clock::time_point t) { return t == Clock::time_point{} ? -1.0 : seconds_between(start_, t); };
    double seconds = seconds_between(start_, end_);
    std::string outcome = complete ? "complete" : stalled ? "stalled" : "timeout";
    if (common_.json) {
      fmt::print(
          R"({{"scenario":"rendezvous","ranks":{},"outcome":"{}","seconds":{:.4f},"connected":{},"answered":{},)"
          R"("released":{},"t_all_connected":{:.4f},"t_all_added":{:.4f},"t_release":{:.4f},"loadgen_cpu_s":{:.4f},{},)"
          R"("first_error":"{}"}})"
          "\n",
          n, outcome, seconds, connected_, answered_, done_, rel(t_connected_), rel(t_adds_), rel(t_release_), cpu_,
          errors_.json(), json_escape(first_error_));
    } else {
      fmt::print("rendezvous ranks={} {} in {:.3f} s (loadgen cpu {:.3f} s): connected={} added={} released={} {}{}\n",
                 n, outcome, seconds, cpu_, connected_, answered_, done_, errors_.text(),
                 first_error_.empty() ? "" : fmt::format(" first error: {}", first_error_));
    }
  }

  const CommonOptions& common_;
  RendezvousOptions opts_;
  Net net_;
  std::vector<Conn> conns_;
  std::vector<std::string> hello_;
  std::string counter_, release_, wait_, release_and_wait_;
  std::size_t opened_ = 0, connected_ = 0, answered_ = 0, done_ = 0, failed_ = 0, failed_before_answer_ = 0;
  Errors errors_;
  std::string first_error_;
  Clock::time_point start_, end_, deadline_, last_progress_, t_connected_{}, t_adds_{}, t_release_{};
  double cpu_start_ = 0, cpu_ = 0;
};

// ---------------------------------------------------------------------------------------------
// throughput

struct ThroughputOptions {
  int connections = 256;
  double duration_s = 3;
  int value_bytes = 64;
  int gets_per_set = 1;  // rounds: SET+GET, then gets_per_set-1 GET-only rounds
  std::string prefix = "tp/";
};

class Throughput {
 public:
  Throughput(const CommonOptions& common, const ThroughputOptions& opts)
      : common_(common),
        opts_(opts),
        net_(resolve(common), static_cast<std::size_t>(opts.connections), common.source_addrs) {
    const auto n = static_cast<std::size_t>(opts.connections);
    conns_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      Conn& c = conns_[i];
      std::string key = fmt::format("{}{}", opts.prefix, i);
      std::string value(static_cast<std::size_t>(opts.value_bytes), 'v');
      c.set_get = encode({make(Op::Set, {key}, {value}), make(Op::Get, {key})});
      c.get_only = encode({make(Op::Get, {key})});
      c.value_at = 1 + 8 + key.size() + 8;  // opcode, key length, key, value length
      c.rx.resize(8 + value.size());
    }
  }

  int run() {
    auto connect_deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(common_.timeout_s));
    for (std::size_t i = 0; i < conns_.size(); ++i) {
      // TCP_NODELAY as torch clients set it: a closed loop of small requests.
      conns_[i].fd = net_.start_connect(i, /*nodelay=*/true);
      if (conns_[i].fd < 0) {
        errors_.connect++;
        note(fmt::format("connect: {}", std::strerror(errno)));
      }
    }
    // All connections up before the clock starts: this scenario measures requests, not accepts.
    std::size_t ready = 0;
    while (ready + errors_.total() < conns_.size() && Clock::now() < connect_deadline) {
      for (const epoll_event& ev : net_.wait(ms_until(connect_deadline, 100))) {
        Conn& c = conns_[ev.data.u64];
        if (c.state != State::Connecting) continue;
        if (ev.events & (EPOLLERR | EPOLLHUP)) {
          int err = 0;
          socklen_t len = sizeof err;
          getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
          fail(c, err ? err : ECONNRESET, "connect");
        } else if (ev.events & EPOLLOUT) {
          c.state = State::Ready;
          ready++;
        }
      }
    }
    bool connected = ready == conns_.size();
    double cpu_start = cpu_seconds();
    start_ = Clock::now();
    stop_at_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts_.duration_s));
    auto hard_deadline = stop_at_ + std::chrono::seconds(5);
    latencies_us_.reserve(1u << 20);
    std::size_t active = 0;
    if (connected) {
      for (auto& c : conns_) {
        if (c.state == State::Ready) {
          send_round(c, start_);
          if (c.state == State::Busy) active++;
        }
      }
    }
    active_ = active;
    while (active_ > 0 && Clock::now() < hard_deadline) {
      for (const epoll_event& ev : net_.wait(ms_until(hard_deadline, 100))) on_event(ev);
    }
    cpu_ = cpu_seconds() - cpu_start;
    report(connected);
    for (auto& c : conns_) {
      if (c.fd >= 0) close(c.fd);
    }
    return connected && active_ == 0 && errors_.total() == 0 ? 0 : 1;
  }

 private:
  enum class State : std::uint8_t { Connecting, Ready, Busy, Finished, Failed };
  struct Conn {
    int fd = -1;
    State state = State::Connecting;
    std::string set_get, get_only;
    std::size_t value_at = 0;  // where the value starts in set_get
    std::uint64_t seq = 0;     // rounds sent
    bool with_set = false;     // the round in flight is SET+GET (two operations)
    std::string rx;            // the expected GET reply: u64 length + value
    std::size_t rx_len = 0;
    std::string_view pending;
    Clock::time_point sent_at;
  };

  void note(std::string what) {
    if (first_error_.empty()) first_error_ = std::move(what);
  }

  void fail(Conn& c, int e, const char* what) {
    errors_.count_errno(e);
    note(fmt::format("{}: {}", what, std::strerror(e)));
    if (c.state == State::Busy) active_--;
    c.state = State::Failed;
  }

  void send_round(Conn& c, Clock::time_point now) {
    c.with_set = c.seq % static_cast<std::uint64_t>(opts_.gets_per_set) == 0;
    if (c.with_set) {
      // A fresh value each SET, so the GET proves it read this round's write.
      auto stamp = fmt::format("{:016x}", c.seq);
      std::memcpy(c.set_get.data() + c.value_at, stamp.data(), std::min(stamp.size(), c.rx.size() - 8));
      std::memcpy(c.rx.data(), c.set_get.data() + c.value_at - 8, c.rx.size());  // expected reply
      c.pending = c.set_get;
    } else {
      c.pending = c.get_only;
    }
    c.seq++;
    c.sent_at = now;
    c.rx_len = 0;
    c.state = State::Busy;
    if (!write_pending(c.fd, c.pending)) fail(c, errno, "send");
  }

  void on_event(const epoll_event& ev) {
    Conn& c = conns_[ev.data.u64];
    if (c.state != State::Busy) return;
    if (ev.events & EPOLLOUT && !c.pending.empty() && !write_pending(c.fd, c.pending)) return fail(c, errno, "send");
    if (!(ev.events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) return;
    for (;;) {
      ssize_t n = recv(c.fd, buf_, sizeof buf_, 0);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        return fail(c, errno, "recv");
      }
      if (n == 0) {
        errors_.eof++;
        note("the server closed a connection");
        active_--;
        c.state = State::Failed;
        return;
      }
      auto got = static_cast<std::size_t>(n);
      if (c.rx_len + got > c.rx.size() || std::memcmp(c.rx.data() + c.rx_len, buf_, got) != 0) {
        errors_.protocol++;
        note("a GET answered something other than the value just SET");
        active_--;
        c.state = State::Failed;
        return;
      }
      c.rx_len += got;
      if (c.rx_len == c.rx.size()) {
        auto now = Clock::now();
        if (now <= stop_at_) {
          ops_ += c.with_set ? 2 : 1;
          rounds_++;
          latencies_us_.push_back(static_cast<std::uint32_t>(
              std::chrono::duration_cast<std::chrono::microseconds>(now - c.sent_at).count()));
          send_round(c, now);
          if (c.state != State::Busy) return;
        } else {
          c.state = State::Finished;
          active_--;
          return;
        }
      }
      if (got < sizeof buf_) return;
    }
  }

  double percentile(double p) {
    if (latencies_us_.empty()) return 0;
    auto k = static_cast<std::size_t>(p * static_cast<double>(latencies_us_.size() - 1));
    std::nth_element(latencies_us_.begin(), latencies_us_.begin() + static_cast<std::ptrdiff_t>(k),
                     latencies_us_.end());
    return latencies_us_[k] / 1000.0;
  }

  void report(bool connected) {
    double ops_per_s = static_cast<double>(ops_) / opts_.duration_s;
    double p50 = percentile(0.5), p99 = percentile(0.99);
    std::string outcome = !connected ? "connect-failed" : errors_.total() ? "errors" : "complete";
    if (common_.json) {
      fmt::print(R"({{"scenario":"throughput","connections":{},"outcome":"{}","duration":{:.3f},"ops":{},"rounds":{},)"
                 R"("ops_per_s":{:.1f},"p50_ms":{:.3f},"p99_ms":{:.3f},"loadgen_cpu_s":{:.4f},{},"first_error":"{}"}})"
                 "\n",
                 conns_.size(), outcome, opts_.duration_s, ops_, rounds_, ops_per_s, p50, p99, cpu_, errors_.json(),
                 json_escape(first_error_));
    } else {
      fmt::print(
          "throughput connections={} {}: {:.0f} ops/s ({} ops in {:.1f} s, loadgen cpu {:.2f} s), round p50 {:.3f} ms "
          "p99 {:.3f} ms, {}{}\n",
          conns_.size(), outcome, ops_per_s, ops_, opts_.duration_s, cpu_, p50, p99, errors_.text(),
          first_error_.empty() ? "" : fmt::format(" first error: {}", first_error_));
    }
  }

  const CommonOptions& common_;
  ThroughputOptions opts_;
  Net net_;
  std::vector<Conn> conns_;
  Errors errors_;
  std::string first_error_;
  std::size_t active_ = 0;
  std::uint64_t ops_ = 0, rounds_ = 0;
  std::vector<std::uint32_t> latencies_us_;
  Clock::time_point start_, stop_at_;
  double cpu_ = 0;
  char buf_[4096];
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Load generator for a TCPStore server (dialect A, torch 1.13 numbering)"};
  app.require_subcommand(1);
  CommonOptions common;
  app.add_option("--host", common.host, "Server IPv4 address")->capture_default_str();
  app.add_option("--port", common.port, "Server port")->required();
  app.add_option("--timeout", common.timeout_s, "Give up after this many seconds")->capture_default_str();
  app.add_option("--stall", common.stall_s, "After a connection error, give up once nothing moved this long (s)")
      ->capture_default_str();
  app.add_flag("--json", common.json, "Print the result as one JSON line");
  app.add_option("--source-addrs", common.source_addrs,
                 "Loopback source addresses to spread connections over (127.0.0.2...); 0 = one per 2048")
      ->capture_default_str()
      ->check(CLI::Range(0, 60000));

  RendezvousOptions rdzv;
  auto* r = app.add_subcommand("rendezvous", "N ranks: SET own key, ADD counter, WAIT on the release key");
  r->add_option("--ranks", rdzv.ranks, "Connections (ranks)")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  r->add_option("--prefix", rdzv.prefix, "Key prefix; use a fresh one per run on a shared server")
      ->capture_default_str();
  r->add_option("--window", rdzv.window, "Most connections awaiting the server's first answer; 0 = no limit")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  r->add_option("--connect-batch", rdzv.connect_batch, "Connects issued between two looks at replies")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);

  ThroughputOptions tp;
  auto* t = app.add_subcommand("throughput", "Closed-loop SET/GET from many connections for a fixed time");
  t->add_option("--connections", tp.connections, "Connections")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  t->add_option("--duration", tp.duration_s, "Seconds of load")->capture_default_str()->check(CLI::PositiveNumber);
  t->add_option("--value-bytes", tp.value_bytes, "Value size (>= 16)")
      ->capture_default_str()
      ->check(CLI::Range(16, 1 << 20));
  t->add_option("--gets-per-set", tp.gets_per_set, "GETs per SET")->capture_default_str()->check(CLI::Range(1, 1000));
  t->add_option("--prefix", tp.prefix, "Key prefix")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  ddp::proc::raise_open_file_limit();  // one descriptor per connection: 16k ranks need 16k
  std::signal(SIGPIPE, SIG_IGN);
  try {
    if (*r) return Rendezvous(common, rdzv).run();
    return Throughput(common, tp).run();
  } catch (const CLI::Error& e) {
    return app.exit(e);
  }
}
