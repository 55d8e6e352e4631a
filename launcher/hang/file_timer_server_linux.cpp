#include "launcher/hang/file_timer_server.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

#include "common/clock.hpp"
#include "common/duration.hpp"
#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "common/signals.hpp"
#include "platform/proc.hpp"

namespace ddp::launcher {

namespace asio = boost::asio;

FileTimerServer::FileTimerServer(asio::io_context& io, FileTimerSetup setup, Hooks hooks)
    : setup_(std::move(setup)), hooks_(std::move(hooks)), fifo_(io), timer_(io) {}

FileTimerServer::~FileTimerServer() { stop(); }

const std::string& FileTimerServer::path() const {
  static const std::string none;
  return serving_ ? setup_.path : none;
}

void FileTimerServer::start() {
  if (!setup_.enabled) {
    if (!setup_.warning.empty()) spdlog::warn("{}", setup_.warning);
    return;
  }
  create_fifo();
  int fd = ::open(setup_.path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    ::unlink(setup_.path.c_str());
    throw Error(fmt::format("torch elastic timer: cannot open the FIFO {}: {}", setup_.path, std::strerror(err)));
  }
  fifo_.assign(fd);
  serving_ = true;
  spdlog::info("torch elastic timer: serving {} ({}=1); workers get it as {}", setup_.path, env::kEnableFileTimer,
               env::kTimerFile);
  wait_readable();
}

// Where: $TORCHELASTIC_TIMER_FILE, else the run directory (file_timer.hpp). A FIFO left there by a
// dead run is replaced (torch's server does the same); one a live process holds, or any other
// file, is never touched.
void FileTimerServer::create_fifo() {
  const auto& path = setup_.path;
  auto where = setup_.path_from_env ? fmt::format("{}={}", env::kTimerFile, path) : path;
  auto fix = setup_.path_from_env ? fmt::format("point {} at another path", env::kTimerFile)
                                  : fmt::format("set {} to a path on a local file system", env::kTimerFile);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISFIFO(st.st_mode)) {
      throw Error(fmt::format("torch elastic timer: {} exists and is not a FIFO; remove it or {}, or unset {}", where,
                              fix, env::kEnableFileTimer));
    }
    if (auto users = proc::processes_with_open(path); !users.empty()) {
      throw Error(fmt::format("torch elastic timer: the FIFO {} is in use by {} (another run's timer?); {}", where,
                              proc::describe(users), fix));
    }
    spdlog::warn("torch elastic timer: replacing the FIFO {} left behind by an earlier run", path);
    ::unlink(path.c_str());
  }
  if (::mkfifo(path.c_str(), 0600) != 0) {  // the user's own processes only
    throw Error(fmt::format("torch elastic timer: cannot create the FIFO {}: {}; {}, or unset {}", where,
                            std::strerror(errno), fix, env::kEnableFileTimer));
  }
}

void FileTimerServer::wait_readable() {
  fifo_.async_wait(asio::posix::stream_descriptor::wait_read, [this](boost::system::error_code ec) {
    if (ec || !serving_) return;
    read_available();
    wait_readable();
  });
}

// At most 1 MiB a turn, so that a flooding writer cannot hold the loop; the rest comes next turn.
void FileTimerServer::read_available() {
  char buf[65536];
  for (int turn = 0; turn < 16; ++turn) {
    ssize_t n = ::read(fifo_.native_handle(), buf, sizeof buf);
    if (n <= 0) break;  // EAGAIN: drained (never 0: our own write end keeps it open)
    for (const auto& line : lines_.feed(std::string_view(buf, static_cast<std::size_t>(n)))) handle_line(line);
  }
  arm();
}

void FileTimerServer::handle_line(const TimerLineSplitter::Line& line) {
  if (line.oversized) {
    complain(malformed_, -1,
             fmt::format("skipped a request longer than {} bytes (torch's client sends at most that): {}...",
                         kMaxTimerRequestBytes, line.text));
    return;
  }
  auto parsed = parse_timer_request(line.text);
  if (!parsed.request) {
    constexpr std::size_t kQuoted = 200;
    complain(malformed_, parsed.pid.value_or(-1),
             fmt::format("skipped a malformed request ({}): {}{}", parsed.error, line.text.substr(0, kQuoted),
                         line.text.size() > kQuoted ? "..." : ""));
    return;
  }
  const auto& r = *parsed.request;
  auto rank = hooks_.rank_of(r.pid);
  if (!rank) {
    complain(foreign_, r.pid,
             fmt::format("ignored a request for pid {} (scope {}): it is not a worker of this run's current attempt "
                         "or a process one started, and only those are ever signalled",
                         r.pid, r.scope_id));
    return;
  }
  if (!table_.apply(r, *rank)) {
    complain(malformed_, r.pid,
             fmt::format("skipped a request from rank {} (pid {}): {} timers are held already", *rank, r.pid,
                         table_.size()));
    return;
  }
  if (hooks_.on_request) hooks_.on_request(*rank);
}

void FileTimerServer::complain(OncePerSender& once, pid_t sender, const std::string& what) {
  if (once.first(sender)) {
    spdlog::warn("torch elastic timer: {} (further ones from {} are counted, not logged)", what,
                 sender > 0 ? fmt::format("pid {}", sender) : std::string("unknown senders"));
  }
}

void FileTimerServer::arm() {
  auto next = table_.earliest();
  if (next == armed_for_) return;
  armed_for_ = next;
  if (!next) {
    timer_.cancel();  // nothing due: no wake-up at all
    return;
  }
  // A worker's deadline may be anything JSON holds (1e300: past the nanosecond clock's 2262): the
  // wait is clamped (common/duration.hpp), and a far deadline is re-armed after the longest wait.
  timer_.expires_after(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(clamped_wait(*next - now_seconds())));
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) on_timer();
  });
}

void FileTimerServer::on_timer() {
  ++wakeups_;
  armed_for_.reset();
  for (auto& e : table_.take_expired(now_seconds())) reap(std::move(e));
  arm();  // the next deadline, or (the clocks differing by a hair) the same one again
}

void FileTimerServer::reap(TimerExpiry e) {
  // Asked again now: the pid may have exited (and been reused) since its request.
  auto rank = hooks_.rank_of(e.pid);
  if (!rank) {
    spdlog::debug("torch elastic timer: pid {} (scope {}) passed its deadline but is gone", e.pid, e.scope_id);
    return;
  }
  e.rank = *rank;
  double late = now_seconds() - e.expiration_time;
  if (e.signal <= 0) {
    spdlog::warn(
        "torch elastic timer: rank {} (pid {}) passed the deadline of scope {} {:.2f} s ago; its request "
        "asked for no signal (signal {}), so it is left running",
        e.rank, e.pid, e.scope_id, late, e.signal);
    hooks_.expired(e, now_seconds());
    return;
  }
  spdlog::warn(
      "torch elastic timer: rank {} (pid {}) did not leave `with expires(...)` at {} by its deadline "
      "({:.2f} s ago): sending {}",
      e.rank, e.pid, e.scope_id, late, sig::signal_name(e.signal));
  if (::kill(e.pid, e.signal) != 0) {
    spdlog::warn("torch elastic timer: could not signal pid {}: {}", e.pid, std::strerror(errno));
    return;
  }
  hooks_.expired(e, now_seconds());
}

void FileTimerServer::new_attempt() {
  table_.clear();
  arm();
}

void FileTimerServer::stop() {
  if (!serving_) return;
  serving_ = false;
  boost::system::error_code ec;
  fifo_.close(ec);
  timer_.cancel();
  armed_for_.reset();
  table_.clear();
  ::unlink(setup_.path.c_str());
  auto skipped = malformed_.total() + foreign_.total();
  if (skipped > malformed_.logged() + foreign_.logged()) {
    spdlog::warn("torch elastic timer: {} bad or foreign requests skipped in all", skipped);
  }
}

}  // namespace ddp::launcher
