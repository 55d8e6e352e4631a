// launcher/rendezvous/rendezvous_client.hpp in the Windows build: joining a c10d rendezvous needs our store
// client, which is POSIX sockets so far. `run` refuses --rdzv-backend c10d on Windows before this
// could be reached (launcher/run/run_options.cpp); a host-only node never calls it.
#include <fmt/format.h>

#include "common/error.hpp"
#include "launcher/rendezvous/rendezvous_client.hpp"

namespace ddp::launcher {

std::unique_ptr<Rendezvous> make_rendezvous_client(boost::asio::io_context&, RendezvousConfig config,
                                                   RendezvousCallbacks) {
  throw Error(
      fmt::format("joining the c10d rendezvous at {}:{} is not in the Windows build (it has no store client "
                  "yet); run the nodes with --nnodes N --node-rank R --master-addr instead",
                  config.endpoint_host, config.endpoint_port));
}

}  // namespace ddp::launcher
