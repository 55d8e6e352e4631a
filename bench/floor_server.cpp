// floor_server: the fastest TCPStore server this machine allows for the benchmark's load, as a
// reference floor. One thread, one epoll set, dialect A only (torch 1.13 numbering), and only the
// requests the load generator sends: SET, GET, ADD, WAIT. No limits, no logging, no Asio: what is
// left is the kernel's cost of the load, which our real server is measured against.
//
// It is not a store anyone should use: unknown requests close the connection, there is no
// stale-WAIT handling and no byte accounting.
#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "platform/proc.hpp"
#include "store/codec.hpp"

namespace {

using ddp::store::get_u64;
using ddp::store::put_i64;
using ddp::store::put_u64;

// Dialect A opcodes (store-protocol.md §4).
constexpr std::uint8_t kSet = 0;
constexpr std::uint8_t kGet = 2;
constexpr std::uint8_t kAdd = 3;
constexpr std::uint8_t kWait = 5;
constexpr char kStopWaiting = 0;

struct StringHash {
  using is_transparent = void;  // lookups by string_view allocate nothing
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using KeyMap = std::unordered_map<std::string, std::string, StringHash, std::equal_to<>>;

struct Waiter {
  int fd;
  std::uint32_t generation;
};

struct Conn {
  bool open = false;
  std::uint32_t generation = 0;  // bumped on close, so waiters of a reused fd are ignored
  std::uint32_t pending = 0;     // keys its WAIT still misses
  std::string in;                // an incomplete request's bytes (rare: clients send whole ones)
  std::string out;               // replies the socket did not take yet (rare)
};

class FloorServer {
 public:
  explicit FloorServer(int listen_fd) : listen_fd_(listen_fd) {
    epfd_ = epoll_create1(EPOLL_CLOEXEC);
    add(listen_fd_, EPOLLIN);
  }

  void run() {
    std::vector<epoll_event> events(1024);
    for (;;) {
      // No timeout needed: the process has nothing to do but answer, and SIGTERM ends it.
      int n = epoll_wait(epfd_, events.data(), static_cast<int>(events.size()), -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::perror("epoll_wait");
        return;
      }
      for (int i = 0; i < n; ++i) {
        int fd = events[i].data.fd;
        if (fd == listen_fd_) {
          accept_all();
        } else {
          if (events[i].events & EPOLLOUT) flush(fd);
          if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) read_all(fd);
        }
      }
      flush_pending();
    }
  }

 private:
  void add(int fd, std::uint32_t ev) {
    epoll_event e{};
    e.events = ev;
    e.data.fd = fd;
    epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &e);
  }

  Conn& conn(int fd) {
    if (static_cast<std::size_t>(fd) >= conns_.size()) conns_.resize(static_cast<std::size_t>(fd) * 2 + 1);
    return conns_[static_cast<std::size_t>(fd)];
  }

  void accept_all() {
    // Drain the whole backlog: a full accept queue makes the kernel drop SYNs (a 1 s retransmit).
    for (;;) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        return;  // EAGAIN, or out of descriptors (the load never gets there: we raise the limit)
      }
      Conn& c = conn(fd);
      c.open = true;
      c.pending = 0;
      // Edge-triggered: one epoll_ctl per connection for its whole life.
      add(fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
    }
  }

  void read_all(int fd) {
    for (;;) {
      ssize_t n = read(fd, buf_, sizeof buf_);
      if (n > 0) {
        if (!consume(fd, std::string_view(buf_, static_cast<std::size_t>(n)))) return;
        if (static_cast<std::size_t>(n) < sizeof buf_) return;  // short read: drained (edge-triggered)
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      close_conn(fd);  // EOF or error
      return;
    }
  }

  // Parses and executes every whole request; false when the connection was closed.
  bool consume(int fd, std::string_view data) {
    Conn& c = conn(fd);
    std::string_view buf = data;
    if (!c.in.empty()) {
      c.in.append(data);
      buf = c.in;
    }
    std::size_t pos = 0;
    for (;;) {
      std::size_t used = execute(fd, buf.substr(pos));
      if (used == 0) break;
      if (used == kBad) {
        close_conn(fd);
        return false;
      }
      pos += used;
    }
    Conn& c2 = conn(fd);  // execute may have grown the table
    if (buf.data() == c2.in.data()) {
      c2.in.erase(0, pos);
    } else if (pos < buf.size()) {
      c2.in.assign(buf.substr(pos));
    }
    return true;
  }

  static constexpr std::size_t kBad = static_cast<std::size_t>(-1);

  // Reads a u64-length-prefixed string at `p`; 0 when incomplete.
  static std::size_t field(std::string_view b, std::size_t p, std::string_view& out) {
    if (b.size() < p + 8) return 0;
    std::uint64_t len = get_u64(b.data() + p);
    if (len > b.size() - p - 8) return 0;
    out = b.substr(p + 8, static_cast<std::size_t>(len));
    return p + 8 + static_cast<std::size_t>(len);
  }

  // Executes one request at the start of `b`: bytes used, 0 when incomplete, kBad on junk.
  std::size_t execute(int fd, std::string_view b) {
    if (b.empty()) return 0;
    std::string_view key, value;
    switch (static_cast<std::uint8_t>(b[0])) {
      case kSet: {
        std::size_t p = field(b, 1, key);
        if (p == 0) return 0;
        p = field(b, p, value);
        if (p == 0) return 0;
        auto it = kv_.find(key);
        if (it == kv_.end()) {
          it = kv_.emplace(std::string(key), std::string(value)).first;
        } else {
          it->second.assign(value);
        }
        wake(it->first);
        return p;
      }
      case kGet: {
        std::size_t p = field(b, 1, key);
        if (p == 0) return 0;
        auto it = kv_.find(key);
        std::string& out = reply_to(fd);
        std::string_view v = it == kv_.end() ? std::string_view() : std::string_view(it->second);
        put_u64(out, v.size());
        out.append(v);
        return p;
      }
      case kAdd: {
        std::size_t p = field(b, 1, key);
        if (p == 0 || b.size() < p + 8) return 0;
        auto delta = static_cast<std::int64_t>(get_u64(b.data() + p));
        auto it = kv_.find(key);
        if (it == kv_.end()) it = kv_.emplace(std::string(key), std::string("0")).first;
        std::int64_t next = std::strtoll(it->second.c_str(), nullptr, 10) + delta;
        char digits[24];
        auto r = fmt::format_to_n(digits, sizeof digits, "{}", next);
        it->second.assign(digits, r.size);
        put_i64(reply_to(fd), next);
        wake(it->first);
        return p + 8;
      }
      case kWait: {
        if (b.size() < 9) return 0;
        std::uint64_t count = get_u64(b.data() + 1);
        // Parse the whole list before acting on it, so a split request is never half-applied.
        std::size_t p = 9;
        for (std::uint64_t i = 0; i < count; ++i) {
          p = field(b, p, key);
          if (p == 0) return 0;
        }
        Conn& c = conn(fd);
        c.pending = 0;
        p = 9;
        for (std::uint64_t i = 0; i < count; ++i) {
          p = field(b, p, key);
          if (kv_.find(key) != kv_.end()) continue;
          auto w = waiters_.find(key);
          if (w == waiters_.end()) w = waiters_.emplace(std::string(key), std::vector<Waiter>()).first;
          w->second.push_back({fd, c.generation});
          c.pending++;
        }
        if (c.pending == 0) reply_to(fd).push_back(kStopWaiting);
        return p;
      }
      default: return kBad;
    }
  }

  void wake(const std::string& key) {
    auto w = waiters_.find(key);
    if (w == waiters_.end()) return;
    std::vector<Waiter> list = std::move(w->second);
    waiters_.erase(w);
    for (const Waiter& waiter : list) {
      Conn& c = conn(waiter.fd);
      if (!c.open || c.generation != waiter.generation || c.pending == 0) continue;
      if (--c.pending == 0) reply_to(waiter.fd).push_back(kStopWaiting);
    }
  }

  // Replies are gathered per connection and written once per event-loop round.
  std::string& reply_to(int fd) {
    Conn& c = conn(fd);
    if (c.out.empty()) dirty_.push_back(fd);
    return c.out;
  }

  void flush_pending() {
    for (int fd : dirty_) flush(fd);
    dirty_.clear();
  }

  void flush(int fd) {
    Conn& c = conn(fd);
    if (!c.open || c.out.empty()) return;
    ssize_t n = write(fd, c.out.data(), c.out.size());
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // EPOLLOUT (edge) will call again
      close_conn(fd);
      return;
    }
    c.out.erase(0, static_cast<std::size_t>(n));
  }

  void close_conn(int fd) {
    Conn& c = conn(fd);
    if (!c.open) return;
    c.open = false;
    c.generation++;
    c.pending = 0;
    c.in.clear();
    c.out.clear();
    close(fd);
  }

  int listen_fd_;
  int epfd_ = -1;
  std::vector<Conn> conns_ = std::vector<Conn>(1024);
  std::vector<int> dirty_;
  KeyMap kv_;
  std::unordered_map<std::string, std::vector<Waiter>, StringHash, std::equal_to<>> waiters_;
  char buf_[64 * 1024];
};

int somaxconn() {
  std::ifstream in("/proc/sys/net/core/somaxconn");
  int n = 0;
  if (in >> n && n > 0) return n;
  return 4096;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Minimal epoll TCPStore server (dialect A: SET, GET, ADD, WAIT): the benchmark's floor"};
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  app.add_option("--host", host, "IPv4 address to listen on")->capture_default_str();
  app.add_option("--port", port, "Port; 0 picks a free one (printed as port=<n>)")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  ddp::proc::raise_open_file_limit();  // thousands of connections need as many descriptors
  std::signal(SIGPIPE, SIG_IGN);

  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  // TCP_NODELAY as every TCPStore server sets it (replies are small and must not wait for a
  // delayed ACK); Linux copies it from the listener into each accepted socket, saving a syscall.
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    fmt::print(stderr, "floor_server: '{}' is not an IPv4 address\n", host);
    return 2;
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, somaxconn()) != 0) {
    fmt::print(stderr, "floor_server: cannot listen on {}:{}: {}\n", host, port, std::strerror(errno));
    return 1;
  }
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  fmt::print("port={}\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  FloorServer(fd).run();
  return 0;
}
