// platform/service.hpp on POSIX: no service manager protocol (systemd runs the daemon as it is).
#include "platform/service.hpp"

namespace ddp::platform {

int run_as_service(const std::string& name, const std::function<int()>&, const std::function<void()>&) {
  throw NotAService(
      "--service is for the Windows service manager; on Linux run the daemon as it is (the .deb's "
      "systemd units: systemctl --user enable --now " +
      name + ")");
}

}  // namespace ddp::platform
