#pragma once
// torch's elastic file timer, served on the supervisor's Asio loop (TORCHELASTIC_ENABLE_FILE_TIMER=1):
// the FIFO torch's FileTimerClient writes its requests to, and the one timer for the earliest
// deadline. The pure parts (requests, lines, the deadline table, pid → rank): launcher/hang/file_timer.hpp.
//
// - The FIFO is opened O_RDWR|O_NONBLOCK and kept open: a client's non-blocking open for writing
//   always finds a reader (no ENXIO, no EPIPE while the supervisor lives), and the read end never
//   sees end-of-file when the last writer closes, so readiness means data (no spinning on EOF).
// - One steady_timer, armed for the earliest deadline only: no wake-up while nothing is due. A
//   deadline further off than a day (any double a worker sends, 1e300 included) waits a day and
//   re-arms, never a wrapped negative wait that fires again and again.
// - On expiry the request's pid gets the request's signal, and nothing else does: unlike torch's
//   FileTimerServer in later releases, the supervisor never signals itself. Only a live worker of
//   the current attempt or a descendant of one is signalled (`Hooks::rank_of`); a request naming
//   any other pid is ignored, since anyone who can open the FIFO could otherwise make the
//   supervisor kill it.
// - A malformed or oversized request is logged once per sender and skipped, never fatal.
#include <sys/types.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <optional>
#include <string>

#include "launcher/hang/file_timer.hpp"
#include "platform/pipe.hpp"

namespace ddp::launcher {

class FileTimerServer {
 public:
  struct Hooks {
    // The global rank of the current attempt's live worker that `pid` is or descends from.
    std::function<std::optional<int>(pid_t)> rank_of;
    // The timer signalled a pid (e.signal ≤ 0: it expired and asked for no signal); `sent_at`:
    // seconds since the epoch.
    std::function<void(const TimerExpiry& e, double sent_at)> expired;
    // A valid request (acquire or release) came from this rank: evidence that it is moving, for a
    // progress watchdog. May be empty.
    std::function<void(int rank)> on_request;
  };

  FileTimerServer(boost::asio::io_context& io, FileTimerSetup setup, Hooks hooks);
  ~FileTimerServer();
  FileTimerServer(const FileTimerServer&) = delete;
  FileTimerServer& operator=(const FileTimerServer&) = delete;

  bool enabled() const { return setup_.enabled; }
  // The FIFO's path while served (what the workers get as TORCHELASTIC_TIMER_FILE); "" otherwise.
  const std::string& path() const;
  // Creates the FIFO and serves it (nothing when not enabled; a warning when the variable is set
  // to something else than 1). Throws ddp::Error naming the path, the cause and the fix.
  void start();
  void set_on_request(std::function<void(int rank)> f) { hooks_.on_request = std::move(f); }
  // A new attempt: the last attempt's deadlines are forgotten.
  void new_attempt();
  // Closes and removes the FIFO; says how many bad requests were skipped.
  void stop();

  std::size_t timers() const { return table_.size(); }
  std::size_t wakeups() const { return wakeups_; }  // the deadline timer's firings (a far one: none)

 private:
  void create_fifo();
  void wait_readable();
  void read_available();
  void handle_line(const TimerLineSplitter::Line& line);
  void complain(OncePerSender& once, pid_t sender, const std::string& what);
  void arm();
  void on_timer();
  void reap(TimerExpiry e);

  FileTimerSetup setup_;
  Hooks hooks_;
  platform::PipeStream fifo_;  // the FIFO's read end (POSIX only: file_timer_server_windows.cpp serves none)
  boost::asio::steady_timer timer_;
  std::optional<double> armed_for_;  // the deadline the timer waits for
  bool serving_ = false;
  std::size_t wakeups_ = 0;
  TimerLineSplitter lines_;
  FileTimerTable table_;
  OncePerSender malformed_;  // bad requests, per sender pid (-1: none known)
  OncePerSender foreign_;    // requests naming a pid that is not this attempt's
};

}  // namespace ddp::launcher
