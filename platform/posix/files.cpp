#include "platform/files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

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

std::optional<std::string> read_own_file(const std::filesystem::path& path) {
  const uid_t me = ::geteuid();
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0) return std::nullopt;
  if (ds.st_uid != me && ds.st_uid != 0) {
    throw ForeignFile(
        fmt::format("{}: its directory belongs to uid {}, not to this user (uid {}): not acting on a "
                    "file another user controls",
                    path.string(), ds.st_uid, me));
  }
  // O_NOFOLLOW: a planted link to some other file; O_NONBLOCK: a planted FIFO must not hang the read.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    if (errno == ELOOP) throw ForeignFile(fmt::format("{}: a symbolic link, not a file this run wrote", path.string()));
    throw std::system_error(errno, std::generic_category(), "open " + path.string());
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw std::system_error(errno, std::generic_category(), "fstat " + path.string());
  if (!S_ISREG(st.st_mode)) throw ForeignFile(fmt::format("{}: not a regular file", path.string()));
  if (st.st_uid != me) {
    throw ForeignFile(fmt::format("{}: owned by uid {}, not by this user (uid {}): another user may have planted it",
                                  path.string(), st.st_uid, me));
  }
  std::string text;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::system_error(errno, std::generic_category(), "read " + path.string());
    if (n == 0) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  return text;
}

std::optional<double> file_birth_time(const std::filesystem::path& path) {
#if defined(STATX_BTIME)
  struct statx st {};
  if (::statx(AT_FDCWD, path.c_str(), 0, STATX_BTIME, &st) != 0 || !(st.stx_mask & STATX_BTIME)) return std::nullopt;
  return static_cast<double>(st.stx_btime.tv_sec) + static_cast<double>(st.stx_btime.tv_nsec) * 1e-9;
#else
  (void)path;
  return std::nullopt;
#endif
}

}  // namespace ddp::platform
