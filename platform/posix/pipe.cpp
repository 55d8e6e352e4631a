#include "platform/pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ddp::platform {

void close_handle(NativeHandle h) {
  if (h != kNoHandle) ::close(h);
}

std::optional<OutputPipe> make_output_pipe(std::string& error) {
  int fds[2] = {-1, -1};
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  return OutputPipe{fds[0], fds[1]};
}

}  // namespace ddp::platform
