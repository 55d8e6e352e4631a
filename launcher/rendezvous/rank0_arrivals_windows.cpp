// launcher/rendezvous/rendezvous_evidence.hpp's rank0_store_arrivals in the Windows build: it has no store
// client yet (store/client.cpp is POSIX sockets), so a --store rank0 run's rendezvous watchdog
// goes without the count of ranks that reached rank 0's store.
#include "launcher/rendezvous/rendezvous_evidence.hpp"

namespace ddp::launcher {

std::optional<std::int64_t> rank0_store_arrivals(const std::string&, std::uint16_t) { return std::nullopt; }

}  // namespace ddp::launcher
