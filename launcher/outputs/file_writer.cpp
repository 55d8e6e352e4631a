#include "launcher/outputs/file_writer.hpp"

#include <cerrno>
#include <system_error>
#include <utility>

namespace ddp::launcher {

FileWriter::FileWriter(std::size_t max_queued_bytes) : max_queued_bytes_(max_queued_bytes) {}

FileWriter::~FileWriter() { finish(); }

FileWriter::FileId FileWriter::open(std::filesystem::path path, Mode mode, std::function<void(int)> on_error) {
  // Created here, not on the writer thread: whoever learns of the file next (a rank_started event,
  // the daemon's `logs -f`) finds it, as it finds the rank. Creating a file is not what a slow
  // disk delays; writing is.
  std::FILE* stream = nullptr;
  int open_error = 0;
  const bool was_finished = finished();
  if (!was_finished) {  // after finish() nothing is written: no file either
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    stream = std::fopen(path.string().c_str(), mode == Mode::Append ? "ab" : "wb");
    open_error = stream ? 0 : errno;
    if (!stream && on_error) on_error(open_error);
    // Unbuffered: each queued write is one write(2) (a pipe read's worth, a metric row), and a full
    // disk shows at the write that failed, with the exact count of what it did not take.
    if (stream) std::setvbuf(stream, nullptr, _IONBF, 0);
  }
  FileId id = 0;
  File* file = nullptr;
  {
    std::lock_guard lock(mu_);
    id = files_.size();
    file = &files_.emplace_back(File{stream, path});
    if (!done_ && !thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  if (!stream && !was_finished) failed(*file, id, open_error, std::nullopt);
  return id;
}

void FileWriter::failed(File& f, FileId id, int error, std::optional<std::uintmax_t> lost) {
  bool first = false;
  Failure failure;
  {
    std::lock_guard lock(mu_);
    if (lost) {  // a write (not the open)
      ++f.failed;
      f.lost += *lost;
    }
    first = f.error == 0;
    if (first) f.error = error ? error : EIO;
    failure = {id, f.path, f.error};
  }
  if (first && on_failure_) on_failure_(failure);
}

std::vector<FileWriter::Loss> FileWriter::losses() const {
  std::lock_guard lock(mu_);
  std::vector<Loss> out;
  for (FileId id = 0; id < files_.size(); ++id) {
    const auto& f = files_[id];
    if (f.error) out.push_back({{id, f.path, f.error}, f.lost, f.written});
  }
  return out;
}

bool FileWriter::write(FileId file, std::string bytes, bool droppable) {
  {
    std::lock_guard lock(mu_);
    if (done_ || (droppable && queued_bytes_ + bytes.size() > max_queued_bytes_)) return false;
    queued_bytes_ += bytes.size();
    queue_.push_back({Op::Write, file, std::move(bytes)});
  }
  cv_.notify_one();
  return true;
}

void FileWriter::close(FileId file) { enqueue({Op::Close, file, {}}); }

void FileWriter::enqueue(Entry entry) {
  {
    std::lock_guard lock(mu_);
    if (done_) return;
    queue_.push_back(std::move(entry));
  }
  cv_.notify_one();
}

bool FileWriter::finished() const {
  std::lock_guard lock(mu_);
  return done_;
}

bool FileWriter::backlogged() const {
  std::lock_guard lock(mu_);
  return queued_bytes_ >= max_queued_bytes_;
}

void FileWriter::when_below_bound(std::function<void()> resume) {
  {
    std::lock_guard lock(mu_);
    if (queued_bytes_ >= max_queued_bytes_ && !done_) {
      waiters_.push_back(std::move(resume));
      return;
    }
  }
  resume();
}

std::vector<std::function<void()>> FileWriter::take_waiters() {
  std::vector<std::function<void()>> out;
  out.swap(waiters_);
  return out;
}

void FileWriter::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
    if (queue_.empty() && done_) break;
    std::deque<Entry> batch;
    batch.swap(queue_);
    queued_bytes_ = 0;
    writing_ = true;
    auto waiters = take_waiters();
    lock.unlock();
    for (auto& resume : waiters) resume();
    run(batch);
    lock.lock();
    writing_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
  for (auto& f : files_) {
    if (f.stream) std::fclose(std::exchange(f.stream, nullptr));
  }
  idle_.notify_all();
}

void FileWriter::run(std::deque<Entry>& batch) {
  for (auto& e : batch) {
    File* f;
    {
      std::lock_guard lock(mu_);
      f = &files_[e.file];
    }
    if (e.op == Op::Close) {
      if (f->stream) std::fclose(std::exchange(f->stream, nullptr));
      continue;
    }
    if (!f->stream) {
      failed(*f, e.file, EBADF, e.bytes.size());
      continue;
    }
    errno = 0;
    const std::size_t done = std::fwrite(e.bytes.data(), 1, e.bytes.size(), f->stream);
    const int error = errno;
    {
      std::lock_guard lock(mu_);
      f->written += done;
    }
    if (done != e.bytes.size()) {
      std::clearerr(f->stream);  // the next write tries again: the disk may have room by then
      failed(*f, e.file, error, e.bytes.size() - done);
    }
  }
}

bool FileWriter::flush(std::chrono::milliseconds limit) {
  std::unique_lock lock(mu_);
  return idle_.wait_for(lock, limit, [&] { return (queue_.empty() && !writing_) || !thread_.joinable(); });
}

void FileWriter::finish() {
  std::vector<std::function<void()>> waiters;
  {
    std::lock_guard lock(mu_);
    if (done_) return;
    done_ = true;
    waiters = take_waiters();
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
  for (auto& resume : waiters) resume();
}

std::size_t FileWriter::failed_writes(FileId file) const {
  std::lock_guard lock(mu_);
  return file < files_.size() ? files_[file].failed : 0;
}

}  // namespace ddp::launcher
