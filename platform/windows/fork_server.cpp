// platform/fork_server.hpp on Windows: there is no fork; warm starts are Linux only (docs/windows.md).
#include "platform/fork_server.hpp"

namespace ddp::platform {

std::optional<ForkChannel> make_fork_channel(std::string& error) {
  error = "Windows has no fork";
  return std::nullopt;
}

std::string channel_argument(NativeHandle) { return {}; }

bool send_message(NativeHandle, const std::string&, const std::vector<NativeHandle>&, std::string& error) {
  error = "Windows has no fork";
  return false;
}

std::optional<std::string> receive_message(NativeHandle, std::chrono::milliseconds, std::string& error) {
  error = "Windows has no fork";
  return std::nullopt;
}

bool adopt_orphans(bool) { return false; }

}  // namespace ddp::platform
