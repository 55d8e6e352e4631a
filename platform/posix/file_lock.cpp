#include "platform/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

namespace ddp::platform {

std::optional<FileIdentity> file_identity(const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

std::optional<LockableFile> LockableFile::open(const std::filesystem::path& path, std::string& error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = std::strerror(errno);
    return std::nullopt;
  }
  return LockableFile(fd);
}

FileIdentity LockableFile::identity() const {
  struct stat st {};
  ::fstat(handle_, &st);
  return FileIdentity{static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
}

bool LockableFile::read_all(std::string& bytes, std::string& error, std::uint64_t max) const {
  bytes.clear();
  char buf[64 * 1024];
  off_t at = 0;
  for (;;) {
    ssize_t n = ::pread(handle_, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      error = std::strerror(errno);
      return false;
    }
    if (n == 0) return true;
    bytes.append(buf, static_cast<std::size_t>(n));
    at += n;
    if (static_cast<std::uint64_t>(at) > max) {
      error = "larger than " + std::to_string(max) + " bytes, far more than a FileStore holds";
      return false;
    }
  }
}

bool LockableFile::lock_exclusive_within(std::chrono::milliseconds timeout, std::chrono::milliseconds retry) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (::flock(handle_, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK && errno != EINTR) return false;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(retry);
  }
}

RemoveResult remove_file(const std::filesystem::path& path) {
  if (::unlink(path.c_str()) == 0) return {true, false, ""};
  return {false, errno == EBUSY, std::strerror(errno)};
}

bool lock_holders_visible() { return true; }

}  // namespace ddp::platform
