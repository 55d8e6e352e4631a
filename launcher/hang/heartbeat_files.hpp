#pragma once
// The ranks' heartbeat files: <run_dir>/attempt_<k>/heartbeats/local_rank_<N>, one per local rank, named to
// each worker in $DDP_HEARTBEAT_FILE. A write, a touch or a close after opening one for writing is
// progress evidence for the hang watchdog, seen through one platform::FileWatch on the directory
// (heartbeat_watch.cpp): on Linux inotify (no polling, no wake-up while nobody writes); on Windows
// its bounded polling (every 100 ms), which sees writes and touches (a changed size or write time)
// but not a close without a write.
#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace ddp::launcher {

// "local_rank_3" → 3; anything else (an editor's swap file) → nullopt.
std::optional<int> heartbeat_local_rank(const std::string& file_name);

class HeartbeatFiles {
 public:
  // Makes `dir` and watches it; on_beat(local_rank) runs on the loop for each heartbeat. When the
  // directory cannot be made or watched, heartbeats are off and enabled() says so.
  HeartbeatFiles(boost::asio::io_context& io, std::filesystem::path dir, std::function<void(int)> on_beat);

  ~HeartbeatFiles();
  bool enabled() const;
  // The local rank's file (for $DDP_HEARTBEAT_FILE); empty when heartbeats are off.
  std::string path_of(int local_rank) const;

 private:
  struct Watch;  // the platform's
  std::filesystem::path dir_;
  std::unique_ptr<Watch> watch_;  // null: heartbeats off
};

}  // namespace ddp::launcher
