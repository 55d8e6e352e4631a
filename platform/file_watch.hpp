#pragma once
// FileWatch: file and directory changes as events on an Asio loop, without polling where the OS can
// tell: how the daemon follows supervisors' event files and the log files a client follows, and how
// the supervisor sees its ranks' heartbeat files (launcher/hang/heartbeat_files.hpp).
//
// POSIX (Linux): one inotify descriptor on the loop. Windows: a bounded polling fallback (each
// watched file's size and write time, each watched directory's entries, every kPollInterval; at
// most kMaxPolledEntries entries per directory), until ReadDirectoryChangesW replaces it.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace ddp::platform {

class FileWatch {
 public:
  using Callback = std::function<void()>;
  // For a directory: the name of the entry an event was about.
  using EntryCallback = std::function<void(const std::string& name)>;

  static constexpr std::chrono::milliseconds kPollInterval{100};  // Windows' fallback
  static constexpr std::size_t kMaxPolledEntries = 4096;          // Windows' fallback, per directory

  explicit FileWatch(boost::asio::io_context& io);  // throws std::system_error when the OS refuses
  ~FileWatch();
  FileWatch(const FileWatch&) = delete;
  FileWatch& operator=(const FileWatch&) = delete;

  // cb runs on the loop after `path` is written to (or closed after writing); returns a token for
  // unwatch, or nullopt when the file cannot be watched (missing).
  std::optional<int> watch(const std::filesystem::path& path, Callback cb);
  // cb(name) runs on the loop for each entry of directory `dir` that was created, written, closed
  // after writing or touched: once per entry per batch of events.
  std::optional<int> watch_directory(const std::filesystem::path& dir, EntryCallback cb);
  void unwatch(int token);

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;  // shared: a pending wait on the loop may outlive us
};

}  // namespace ddp::platform
