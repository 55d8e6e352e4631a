#pragma once
// Network facts about this host, for multi-node launches: which local interface reaches a given
// peer, and whether the host name resolves to a loopback address (what gloo would advertise).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::net {

// The name of the local interface the kernel routes `host` through (no packet is sent: a UDP
// socket is connected and its local address looked up among the interfaces). nullopt when the
// host does not resolve or no interface holds that address.
std::optional<std::string> interface_towards(const std::string& host, std::uint16_t port);

// True when this host's name resolves only to loopback addresses (or not at all).
bool hostname_is_loopback();

// HOST:PORT as flags take it; an IPv6 host is written in brackets: [::1]:29500.
struct HostPort {
  std::string host;                   // without the brackets: "::1"
  std::optional<std::uint16_t> port;  // nullopt when the port was optional and not given
};

struct HostPortRules {
  bool port_required = true;   // false: HOST alone is fine (the caller has a default)
  std::uint16_t min_port = 1;  // 0 where port 0 means "any free port"
};

// The parsed address, or why `text` is not one ("no host", "no port", "'99999' is not a port
// number (1..65535)", "write an IPv6 host as [ADDR]"). The caller names its flag.
struct HostPortResult {
  std::optional<HostPort> value;
  std::string problem;  // set when value is empty
};
HostPortResult parse_host_port(std::string_view text, HostPortRules rules = {});

}  // namespace ddp::net
