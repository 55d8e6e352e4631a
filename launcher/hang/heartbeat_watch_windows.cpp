// launcher/hang/heartbeat_files.hpp in the Windows build: heartbeat files are not watched (no
// $DDP_HEARTBEAT_FILE is given to the workers); output lines alone count as progress.
#include <spdlog/spdlog.h>

#include "launcher/hang/heartbeat_files.hpp"

namespace ddp::launcher {

struct HeartbeatFiles::Watch {};

HeartbeatFiles::HeartbeatFiles(boost::asio::io_context&, std::filesystem::path dir, std::function<void(int)>)
    : dir_(std::move(dir)) {
  spdlog::debug("heartbeat files are not watched in the Windows build: output lines count as progress");
}

HeartbeatFiles::~HeartbeatFiles() = default;

bool HeartbeatFiles::enabled() const { return false; }

}  // namespace ddp::launcher
