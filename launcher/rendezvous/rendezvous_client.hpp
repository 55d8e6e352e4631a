#pragma once
// The two rendezvous shells' shared parts, and the joining one (rendezvous_client.cpp); the
// hosting one and Rendezvous::create live in rendezvous.cpp.
#include <boost/asio/io_context.hpp>
#include <memory>
#include <string>

#include "launcher/rendezvous/rendezvous.hpp"

namespace ddp::launcher {

// Unique per supervisor process: NAME:PID:RANDOM.
std::string make_rdzv_token(const std::string& name);
// "rdzv/<run id>/": every rendezvous key lives under it.
std::string rdzv_prefix(const RendezvousConfig& c);

// A node that does not host the rendezvous store: joins it through one helper thread.
std::unique_ptr<Rendezvous> make_rendezvous_client(boost::asio::io_context& io, RendezvousConfig config,
                                                   RendezvousCallbacks callbacks);

}  // namespace ddp::launcher
