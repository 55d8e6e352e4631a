#include "platform/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

namespace ddp::platform {

std::filesystem::path make_unique_directory(const std::filesystem::path& parent, const std::string& prefix) {
  std::string tmpl = (parent / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
  return std::filesystem::absolute(tmpl);
}

bool write_private_file(const std::filesystem::path& path, const std::string& content, std::string& error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = std::strerror(errno);
    return false;
  }
  ::fchmod(fd, 0600);
  bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
  if (!ok) error = "a short write";
  ::close(fd);
  return ok;
}

ProcessLock lock_for_process_lifetime(const std::filesystem::path& path, std::string& error) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) {
    error = std::strerror(errno);
    return ProcessLock::Failed;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return ProcessLock::Busy;
  }
  auto text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd, 0) != 0 || ::write(fd, text.data(), text.size()) < 0) error = "cannot record our pid in it";
  return ProcessLock::Held;  // fd stays open (and locked) for the life of the process
}

}  // namespace ddp::platform
