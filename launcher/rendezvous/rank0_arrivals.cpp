// launcher/rendezvous/rendezvous_evidence.hpp's rank0_store_arrivals: the script's rank 0 store, read with
// our client (store/client.hpp; its sockets are platform/tcp_client's, POSIX and Windows).
#include "launcher/rendezvous/rendezvous_evidence.hpp"
#include "store/client.hpp"

namespace ddp::launcher {

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
