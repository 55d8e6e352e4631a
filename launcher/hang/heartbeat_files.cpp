#include "launcher/hang/heartbeat_files.hpp"

#include <charconv>
#include <string_view>

namespace ddp::launcher {

namespace {
constexpr std::string_view kPrefix = "local_rank_";
}

std::optional<int> heartbeat_local_rank(const std::string& file_name) {
  std::string_view s(file_name);
  if (s.substr(0, kPrefix.size()) != kPrefix || s.size() == kPrefix.size()) return std::nullopt;
  s.remove_prefix(kPrefix.size());
  int n = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc() || end != s.data() + s.size() || n < 0) return std::nullopt;
  return n;
}

std::string HeartbeatFiles::path_of(int local_rank) const {
  if (!enabled()) return {};
  return (dir_ / (std::string(kPrefix) + std::to_string(local_rank))).string();
}

}  // namespace ddp::launcher
