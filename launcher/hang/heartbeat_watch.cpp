// launcher/hang/heartbeat_files.hpp's watch: one platform::FileWatch on the directory (Linux: an
// inotify watch for creates, writes, closes after writing and touches; Windows: bounded polling of
// the entries' sizes and write times, file_watch.hpp).
#include <spdlog/spdlog.h>

#include "launcher/hang/heartbeat_files.hpp"
#include "platform/file_watch.hpp"

namespace ddp::launcher {

struct HeartbeatFiles::Watch {
  explicit Watch(boost::asio::io_context& io) : files(io) {}
  platform::FileWatch files;
};

HeartbeatFiles::HeartbeatFiles(boost::asio::io_context& io, std::filesystem::path dir, std::function<void(int)> on_beat)
    : dir_(std::move(dir)) {
  std::unique_ptr<Watch> watch;
  std::string why;
  try {
    watch = std::make_unique<Watch>(io);
  } catch (const std::exception& e) {
    why = e.what();
  }
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  std::optional<int> token;
  if (watch && !ec) {
    token = watch->files.watch_directory(dir_, [on_beat = std::move(on_beat)](const std::string& name) {
      if (auto r = heartbeat_local_rank(name)) on_beat(*r);
    });
  }
  if (!token) {
    spdlog::warn("cannot watch {} ({}): heartbeat files are off for this run (output lines still count as progress)",
                 dir_.string(),
                 ec            ? ec.message()
                 : why.empty() ? "the directory cannot be watched"
                               : why);
    return;
  }
  watch_ = std::move(watch);
}

HeartbeatFiles::~HeartbeatFiles() = default;

bool HeartbeatFiles::enabled() const { return watch_ != nullptr; }

}  // namespace ddp::launcher
