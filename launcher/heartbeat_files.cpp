#include "launcher/heartbeat_files.hpp"

#include <spdlog/spdlog.h>
#include <sys/inotify.h>

#include <charconv>
#include <string_view>

namespace ddp::launcher {

namespace {
constexpr std::string_view kPrefix = "local_rank_";
}

std::optional<int> heartbeat_local_rank(const std::string& file_name) {
  std::string_view s(file_name);
  if (s.substr(0, kPrefix.size()) != kPrefix || s.size() == kPrefix.size()) return std::nullopt;
  s.remove_prefix(kPrefix.size());
  int n = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n < 0) return std::nullopt;
  return n;
}

HeartbeatFiles::HeartbeatFiles(boost::asio::io_context& io, std::filesystem::path dir, std::function<void(int)> on_beat)
    : dir_(std::move(dir)), inotify_(io) {
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  // IN_CLOSE_WRITE: open(…, "w").close(); IN_MODIFY: a write to a file kept open; IN_ATTRIB: touch;
  // IN_CREATE: the first open of a new file.
  if (!ec) {
    token_ = inotify_.watch_directory(dir_, IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB,
                                      [on_beat = std::move(on_beat)](const std::string& name) {
                                        if (auto r = heartbeat_local_rank(name)) on_beat(*r);
                                      });
  }
  if (!token_) {
    spdlog::warn("cannot watch {} ({}): heartbeat files are off for this run (output lines still count as progress)",
                 dir_.string(), ec ? ec.message() : "inotify_add_watch failed");
  }
}

std::string HeartbeatFiles::path_of(int local_rank) const {
  if (!token_) return {};
  return (dir_ / (std::string(kPrefix) + std::to_string(local_rank))).string();
}

}  // namespace ddp::launcher
