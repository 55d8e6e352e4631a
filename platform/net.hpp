#pragma once
// Network facts about this host, for multi-node launches: which local interface reaches a given
// peer, and whether the host name resolves to a loopback address (what gloo would advertise).
#include <cstdint>
#include <optional>
#include <string>

namespace ddp::net {

// The name of the local interface the kernel routes `host` through (no packet is sent: a UDP
// socket is connected and its local address looked up among the interfaces). nullopt when the
// host does not resolve or no interface holds that address.
std::optional<std::string> interface_towards(const std::string& host, std::uint16_t port);

// True when this host's name resolves only to loopback addresses (or not at all).
bool hostname_is_loopback();

}  // namespace ddp::net
