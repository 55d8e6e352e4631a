// launcher/hang/file_timer_server.hpp in the Windows build: torch's elastic file timer talks over a FIFO
// (os.mkfifo), which Windows has not — torch's own FileTimerServer is POSIX-only too. Asked for
// (TORCHELASTIC_ENABLE_FILE_TIMER=1), the run says so once and goes on without it: the workers get
// no TORCHELASTIC_TIMER_FILE, and the hang watchdog (--hang-timeout) still watches their output.
#include <spdlog/spdlog.h>

#include "launcher/hang/file_timer_server.hpp"

namespace ddp::launcher {

FileTimerServer::FileTimerServer(boost::asio::io_context& io, FileTimerSetup setup, Hooks hooks)
    : setup_(std::move(setup)), hooks_(std::move(hooks)), fifo_(io), timer_(io) {}

FileTimerServer::~FileTimerServer() = default;

const std::string& FileTimerServer::path() const {
  static const std::string none;
  return none;
}

void FileTimerServer::start() {
  if (!setup_.enabled) {
    if (!setup_.warning.empty()) spdlog::warn("{}", setup_.warning);
    return;
  }
  spdlog::warn(
      "TORCHELASTIC_ENABLE_FILE_TIMER=1: torch's elastic file timer needs a FIFO, which Windows has not (torch's own "
      "server is POSIX-only); it is not served (--hang-timeout still watches the ranks)");
}

void FileTimerServer::new_attempt() {}

void FileTimerServer::stop() {}

}  // namespace ddp::launcher
