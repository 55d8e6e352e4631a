#include "launcher/rendezvous/rendezvous_evidence.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace ddp::launcher {

std::optional<std::int64_t> filestore_barrier_count(const store::FileStoreLog& log) {
  std::optional<std::int64_t> best;
  for (const auto& [key, value] : log.live()) {
    if (key.find("store_based_barrier_key") == std::string::npos) continue;
    try {
      auto n = std::stoll(value);
      if (!best || n > *best) best = n;
    } catch (const std::exception&) {
    }
  }
  return best;
}

bool filestore_names_rank(const store::FileStoreLog& log, int rank) {
  auto suffix = fmt::format("/rank_{}", rank);
  for (const auto& [key, value] : log.live()) {
    if (key.size() >= suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) return true;
  }
  return false;
}

store::FileStoreLog read_filestore(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  if (in) bytes << in.rdbuf();
  return store::FileStoreLog::parse(bytes.str());
}

}  // namespace ddp::launcher
