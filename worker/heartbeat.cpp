#include "worker/heartbeat.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

#include "common/env_contract.hpp"

namespace ddp::worker {

bool heartbeat(const std::string& path) {
  if (path.empty()) return false;
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

bool heartbeat() {
  // Read each time: cheap, and right after a fork or an exec with a new environment.
  const char* path = std::getenv(std::string(env::kHeartbeatFile).c_str());
  return path != nullptr && heartbeat(std::string(path));
}

}  // namespace ddp::worker
