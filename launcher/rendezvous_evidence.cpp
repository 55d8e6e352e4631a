#include "launcher/rendezvous_evidence.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "store/client.hpp"

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

std::optional<std::int64_t> rank0_store_arrivals(const std::string& host, std::uint16_t port) {
  try {
    store::ClientOptions o;
    o.host = host;
    o.port = port;
    o.dialect = store::Dialect::A;
    o.connect_timeout = std::chrono::seconds(2);
    o.timeout = std::chrono::seconds(2);
    store::StoreClient client(o);
    // CHECK first: torch 1.13's server answers a GET of a missing key with an exception in its
    // daemon thread, not with a reply.
    if (!client.check({"init/"})) return 0;
    return std::stoll(client.get("init/"));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace ddp::launcher
