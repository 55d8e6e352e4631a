#include "jobs/api_policy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "common/error.hpp"

namespace ddp::jobs {

std::size_t tcp_connection_cap(std::uint64_t open_file_limit, std::optional<std::size_t> explicit_cap) {
  std::uint64_t usable = open_file_limit > kReservedDescriptors ? open_file_limit - kReservedDescriptors : 0;
  if (explicit_cap) {
    if (*explicit_cap > usable) {
      throw UsageError(fmt::format(
          "--max-tcp-connections {} leaves too few of the {} descriptors this process may open (RLIMIT_NOFILE) for "
          "the unix socket and the jobs: give at most {}, or raise the limit (ulimit -Hn)",
          *explicit_cap, open_file_limit, usable));
    }
    return *explicit_cap;
  }
  return static_cast<std::size_t>(std::max<std::uint64_t>(1, std::min<std::uint64_t>(1024, open_file_limit / 2)));
}

std::optional<std::string> bearer_credentials(std::string_view header) {
  constexpr std::string_view scheme = "bearer";
  if (header.size() <= scheme.size() || header[scheme.size()] != ' ') return std::nullopt;
  for (std::size_t i = 0; i < scheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != scheme[i]) return std::nullopt;
  }
  auto rest = header.substr(scheme.size());
  rest.remove_prefix(std::min(rest.find_first_not_of(' '), rest.size()));
  return std::string(rest);
}

bool constant_time_equal(const std::string& presented, const std::string& expected) {
  if (presented.size() != expected.size() || expected.empty()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < presented.size(); ++i) {
    diff = static_cast<unsigned char>(diff | (presented[i] ^ expected[i]));
  }
  return diff == 0;
}

}  // namespace ddp::jobs
