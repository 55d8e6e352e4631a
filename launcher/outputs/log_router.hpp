#pragma once
// Log routing: each rank's stdout and stderr from its pipe to where torchrun's -r/--redirects,
// -t/--tee (launcher/outputs/output_lines.hpp's route_stream) and --local-ranks-filter send them: the
// console (prefixed lines, through the Console thread), its per-rank files (the worker's bytes
// exactly, through the FileWriter thread), the metrics and the filtered logs (whole lines). The
// last lines stay in memory for the failure summary and the rendezvous watchdog.
//
// Nothing here blocks the event loop: a slow terminal drops console lines (counted), a slow disk
// pauses only the reading of the rank whose file is behind (FileWriter's bound), so that rank
// waits for the disk as it would writing the file itself.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "launcher/outputs/file_writer.hpp"
#include "launcher/outputs/output_lines.hpp"
#include "platform/pipe.hpp"

namespace ddp::launcher {

class MetricsRecorder;
class FilteredLogWriter;

// Console output from a separate thread with a bounded queue: a slow terminal must never stall
// the event loop (and through full pipes, the workers). Lines beyond the bound are counted and
// reported instead of blocking.
class Console {
 public:
  Console();
  ~Console();
  Console(const Console&) = delete;
  Console& operator=(const Console&) = delete;
  // Waits (at most `limit`) until everything queued so far is written: a log line that follows
  // console text (the restart after a failure summary) comes after it.
  void drain(std::chrono::milliseconds limit);
  void write(FILE* stream, std::string text);

 private:
  static constexpr std::size_t kMaxQueued = 16u << 20;
  struct Item {
    FILE* stream;
    std::string text;
  };
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_;
  bool writing_ = false;
  std::deque<Item> queue_;
  std::size_t queued_bytes_ = 0;
  std::size_t dropped_ = 0;
  bool done_ = false;
  std::thread thread_;
};

// The whole lines a rank writes to one stream after a mark, until the stream ends (EOF, or its pipe
// closed): how the hang forensics read the traceback faulthandler writes to stderr on SIGABRT. The
// stream is routed as usual meanwhile (console, -r/-t files): a redirected stderr is captured too.
struct StreamCapture {
  static constexpr std::size_t kMaxBytes = 8u << 20;  // beyond it lines are dropped and counted
  std::vector<std::string> lines;
  std::size_t bytes = 0;
  std::size_t dropped = 0;
  bool ended = false;            // the stream reached its end (set before on_end runs)
  std::function<void()> on_end;  // once, at the end; not when the stream had ended before the mark
};

struct RankStream {
  explicit RankStream(boost::asio::io_context& io) : pipe(io) {}
  platform::PipeStream pipe;  // the read end (Windows: a read at the end says broken_pipe, not eof)
  OutputLines lines;          // for the console, the metrics and the summary; the file gets the bytes as read
  std::vector<char> buf = std::vector<char>(64 * 1024);
  bool open = true;
  bool console = true;  // shown on the console (not redirected, or teed; and not filtered out)
  std::optional<FileWriter::FileId> file;
  std::shared_ptr<StreamCapture> capture;  // set by capture_stream
};

// Starts capturing `s`'s lines from now on (a capture already running is replaced). A stream that
// has ended already gives a capture that is `ended` at once.
std::shared_ptr<StreamCapture> capture_stream(RankStream& s, std::function<void()> on_end);

// One rank's output, as routed and as remembered.
struct RankOutput {
  explicit RankOutput(boost::asio::io_context& io) : out(io), err(io) {}
  int attempt = 0;
  int rank = 0;  // global
  int local_rank = 0;
  std::string prefix;  // of its console and filtered-log lines
  RankStream out;
  RankStream err;
  std::deque<std::string> last_stderr;  // for the failure summary (kLastStderrLines)
  std::deque<std::string> last_output;  // both streams: what a rank that never arrived said last

  static constexpr std::size_t kLastStderrLines = 20;
  static constexpr std::size_t kLastOutputLines = 5;
  bool drained() const { return !out.open && !err.open; }
  void stop_reading();  // closes the pipes: pending reads end as at EOF
};

class LogRouter {
 public:
  // on_stream_end: a rank's stream reached its end (EOF, or its pipe was closed).
  LogRouter(boost::asio::io_context& io, Console& console, FileWriter& files, MetricsRecorder& metrics,
            FilteredLogWriter& filtered, std::function<void()> on_stream_end);

  // Routes the rank's pipes (its files stdout.log/stderr.log in `dir`) and starts reading them.
  // `r` must outlive the reads (the supervisor keeps every attempt's ranks to its end).
  void start(RankOutput& r, platform::NativeHandle stdout_fd, platform::NativeHandle stderr_fd,
             const RankRouting& routing, const std::filesystem::path& dir);
  // Called for every read of a rank's output (either stream), after it was routed: the hang
  // watchdog's progress evidence. Any bytes count, not only whole lines: a progress bar (tqdm)
  // redraws itself with `\r` and writes no newline until it closes. Must be cheap: it runs once
  // per read.
  void on_output(std::function<void(const RankOutput&)> hook) { output_hook_ = std::move(hook); }

 private:
  void read(RankOutput& r, RankStream& s, FILE* console);
  void on_read_done(RankOutput& r, RankStream& s, FILE* console, boost::system::error_code ec, std::size_t n);
  void on_read(RankOutput& r, RankStream& s, FILE* console, std::size_t n);
  void on_line(RankOutput& r, RankStream& s, FILE* console, std::string line);

  boost::asio::io_context& io_;
  Console& console_;
  FileWriter& files_;
  MetricsRecorder& metrics_;
  FilteredLogWriter& filtered_;
  std::function<void()> on_stream_end_;
  std::function<void(const RankOutput&)> output_hook_;
  const bool slow_reads_;  // fault injection (common/fault_injection.hpp): slow-pipe-reads
};

}  // namespace ddp::launcher
