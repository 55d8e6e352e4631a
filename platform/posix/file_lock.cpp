#include "platform/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
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

std::optional<std::size_t> LockableFile::read_at(std::uint64_t offset, char* buf, std::size_t size,
                                                 std::string& error) const {
  for (;;) {
    const ssize_t n = ::pread(handle_, buf, size, static_cast<off_t>(offset));
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EINTR) {
      error = std::strerror(errno);
      return std::nullopt;
    }
  }
}

LockableFile::TryLock LockableFile::try_lock_exclusive() {
  if (::flock(handle_, LOCK_EX | LOCK_NB) == 0) return TryLock::Locked;
  return errno == EWOULDBLOCK || errno == EINTR ? TryLock::Busy : TryLock::Failed;
}

RemoveResult remove_file(const std::filesystem::path& path) {
  if (::unlink(path.c_str()) == 0) return {true, false, ""};
  return {false, errno == EBUSY, std::strerror(errno)};
}

bool lock_holders_visible() { return true; }

}  // namespace ddp::platform
