#pragma once
// File-change notifications on the daemon's Asio loop (inotify): how it follows supervisors'
// event files and the log files a client follows, without polling.
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>

namespace ddp::jobs {

class Inotify {
 public:
  using Callback = std::function<void()>;
  explicit Inotify(boost::asio::io_context& io);
  ~Inotify();
  // cb runs on the loop after `path` is written to (or closed after writing); returns a token for
  // unwatch, or nullopt when the file cannot be watched (missing).
  std::optional<int> watch(const std::filesystem::path& path, Callback cb);
  void unwatch(int token);

 private:
  void arm();
  int fd_ = -1;
  boost::asio::posix::stream_descriptor stream_;
  std::map<int, std::map<int, Callback>> callbacks_;  // wd → token → callback
  std::map<int, int> wd_of_;                          // token → wd
  int next_token_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ddp::jobs
