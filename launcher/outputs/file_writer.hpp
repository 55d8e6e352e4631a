#pragma once
// FileWriter: the one writer thread behind the supervisor's files (per-rank stdout/stderr logs,
// the filtered logs, metrics.csv). The event loop only queues: a slow disk never stalls the loop
// (and, through full pipes, every worker). The queue is bounded:
//   - droppable bytes (filtered lines, metric rows) beyond the bound are refused: the caller counts
//     and reports them, never waits;
//   - kept bytes (a rank's own output: its file holds the worker's bytes exactly) are always
//     queued; the caller stops reading that rank's pipe while backlogged() and resumes from
//     when_below_bound(), so only that worker waits for the disk, as it would writing itself.
// Files are created by open() itself (directories too), so a reader who learns of a file finds
// it; the bytes go through the writer thread, and every batch is flushed, so a reader (tail -f, a test) sees it at
// once. No thread is started until a file is opened.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
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
    std::size_t failed = 0;       // under mu_
  };
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
  std::thread thread_;
};

}  // namespace ddp::launcher
