#pragma once
// File-change notifications on an Asio loop (inotify), without polling: how the daemon follows
// supervisors' event files and the log files a client follows, and how the supervisor sees its
// ranks' heartbeat files (launcher/hang/heartbeat_files.hpp).
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace ddp {

class Inotify {
 public:
  using Callback = std::function<void()>;
  // For a directory: the name of the entry an event was about.
  using EntryCallback = std::function<void(const std::string& name)>;
  explicit Inotify(boost::asio::io_context& io);
  ~Inotify();
  Inotify(const Inotify&) = delete;
  Inotify& operator=(const Inotify&) = delete;
  // cb runs on the loop after `path` is written to (or closed after writing); returns a token for
  // unwatch, or nullopt when the file cannot be watched (missing).
  std::optional<int> watch(const std::filesystem::path& path, Callback cb);
  // cb(name) runs on the loop for each entry of directory `dir` an event of `mask` (IN_CREATE,
  // IN_MODIFY, IN_CLOSE_WRITE, IN_ATTRIB...) was about: once per entry per batch of events.
  std::optional<int> watch_directory(const std::filesystem::path& dir, std::uint32_t mask, EntryCallback cb);
  void unwatch(int token);

 private:
  std::optional<int> add(const std::filesystem::path& path, std::uint32_t mask, EntryCallback cb);
  void arm();
  void dispatch(const char* buf, long n);
  int fd_ = -1;
  boost::asio::posix::stream_descriptor stream_;
  std::map<int, std::map<int, EntryCallback>> callbacks_;  // wd → token → callback
  std::map<int, int> wd_of_;                               // token → wd
  int next_token_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ddp
