#include "platform/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <system_error>

namespace ddp::platform {

std::filesystem::path make_unique_directory(const std::filesystem::path& parent, const std::string& prefix) {
  std::string tmpl = (parent / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
  return std::filesystem::absolute(tmpl);
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
