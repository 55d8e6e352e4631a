#pragma once
// FileWriter: the one writer thread behind the supervisor's files (per-rank stdout/stderr logs,
// the filtered logs, metrics.csv). The event loop only queues: a slow disk never stalls the loop
// (and, through full pipes, every worker). The queue is bounded:
//   - droppable bytes (filtered lines, metric rows) beyond the bound are refused: the caller counts
//     and reports them, never waits;
//   - kept bytes (a rank's own output: its file holds the worker's bytes exactly) are always
//     queued; the caller stops reading that rank's pipe while backlogged() and resumes from
//     when_below_bound(), so only that worker waits for the disk, as it would writing itself.
// A write that fails (a full disk, a quota, an I/O error) never stops or blocks anything: the
// file's first failure is reported at once through on_failure (the supervisor says it and emits an
// event), the bytes it lost are counted (losses()), and later writes are tried again (the disk may
// have room again; the file then has a gap, which the count says). Streams are unbuffered, so a
// failure is seen at the write that failed and its count is exact, not hidden in a later flush.
// Files are created by open() itself (directories too), so a reader who learns of a file finds
// it; the bytes go through the writer thread, and every batch is flushed, so a reader (tail -f, a test) sees it at
// once. No thread is started until a file is opened.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ddp::launcher {

class FileWriter {
 public:
  using FileId = std::size_t;
  enum class Mode { Truncate, Append };
  static constexpr std::size_t kDefaultMaxQueuedBytes = 16u << 20;

  explicit FileWriter(std::size_t max_queued_bytes = kDefaultMaxQueuedBytes);
  ~FileWriter();  // finish()
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  // Creates (Truncate) or opens (Append) the file now; on_error(errno), called from here, when it
  // cannot. Its writes then count as failed_writes.
  FileId open(std::filesystem::path path, Mode mode, std::function<void(int)> on_error = {});
  // False when refused: droppable and the queue is over the bound, or after finish().
  bool write(FileId file, std::string bytes, bool droppable);
  void close(FileId file);  // after the bytes queued before it

  bool backlogged() const;
  // `resume` runs once the queue is below the bound (on the writer thread: post it to your loop),
  // at once when it is already.
  void when_below_bound(std::function<void()> resume);

  // Waits until everything queued so far is written and flushed; false when `limit` passed first.
  bool flush(std::chrono::milliseconds limit);
  // Writes what is queued, closes the files and stops the thread.
  void finish();
  // Writes to `file` that could not be done (the file could not be opened or written).
  std::size_t failed_writes(FileId file) const;

  // A file that could not be opened or written: its first failure.
  struct Failure {
    FileId file = 0;
    std::filesystem::path path;
    int error = 0;  // errno
  };
  // Called once per file, at its first failure: on the writer thread (post it to your loop), or
  // in open(). Set before the first open.
  void on_failure(std::function<void(const Failure&)> f) { on_failure_ = std::move(f); }
  // Every file that lost bytes (or could not be opened): its first error and the bytes not written.
  struct Loss {
    Failure failure;
    std::uintmax_t lost_bytes = 0;
    std::uintmax_t written_bytes = 0;
  };
  std::vector<Loss> losses() const;

 private:
  enum class Op { Write, Close };
  bool finished() const;
  struct Entry {
    Op op;
    FileId file;
    std::string bytes;
  };
  struct File {
    std::FILE* stream = nullptr;  // set by open(); then the writer thread's only
    std::filesystem::path path;
    std::size_t failed = 0;  // under mu_ (from here: failed, error, lost, written)
    int error = 0;           // the first failure's errno
    std::uintmax_t lost = 0;
    std::uintmax_t written = 0;
  };
  // A write that lost `lost` bytes (writer thread), or the open that failed (nullopt).
  void failed(File& f, FileId id, int error, std::optional<std::uintmax_t> lost);
  void enqueue(Entry entry);
  void loop();
  void run(std::deque<Entry>& batch);  // writer thread, without the lock
  std::vector<std::function<void()>> take_waiters();

  const std::size_t max_queued_bytes_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_;
  std::deque<Entry> queue_;
  std::size_t queued_bytes_ = 0;
  bool writing_ = false;
  bool done_ = false;
  std::deque<File> files_;  // by FileId; stable addresses
  std::vector<std::function<void()>> waiters_;
  std::function<void(const Failure&)> on_failure_;
  std::thread thread_;
};

}  // namespace ddp::launcher
