// launcher/hang/heartbeat_files.hpp's watch on Linux: one inotify watch on the directory.
#include <spdlog/spdlog.h>
#include <sys/inotify.h>

#include "platform/file_watch.hpp"
#include "launcher/hang/heartbeat_files.hpp"

namespace ddp::launcher {

struct HeartbeatFiles::Watch {
  explicit Watch(boost::asio::io_context& io) : inotify(io) {}
  platform::FileWatch inotify;
};

HeartbeatFiles::HeartbeatFiles(boost::asio::io_context& io, std::filesystem::path dir, std::function<void(int)> on_beat)
    : dir_(std::move(dir)) {
  auto watch = std::make_unique<Watch>(io);
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  std::optional<int> token;
  // IN_CLOSE_WRITE: open(…, "w").close(); IN_MODIFY: a write to a file kept open; IN_ATTRIB: touch;
  // IN_CREATE: the first open of a new file.
  if (!ec) {
    token = watch->inotify.watch_directory(dir_, IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB,
                                           [on_beat = std::move(on_beat)](const std::string& name) {
                                             if (auto r = heartbeat_local_rank(name)) on_beat(*r);
                                           });
  }
  if (!token) {
    spdlog::warn("cannot watch {} ({}): heartbeat files are off for this run (output lines still count as progress)",
                 dir_.string(), ec ? ec.message() : "inotify_add_watch failed");
    return;
  }
  watch_ = std::move(watch);
}

HeartbeatFiles::~HeartbeatFiles() = default;

bool HeartbeatFiles::enabled() const { return watch_ != nullptr; }

}  // namespace ddp::launcher
