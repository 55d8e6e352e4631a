#include "platform/files.hpp"

#include <cerrno>
#include <cstdlib>
#include <system_error>

namespace ddp::platform {

std::filesystem::path make_unique_directory(const std::filesystem::path& parent, const std::string& prefix) {
  std::string tmpl = (parent / (prefix + "XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp " + tmpl);
  return std::filesystem::absolute(tmpl);
}

}  // namespace ddp::platform
