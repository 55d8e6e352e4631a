#pragma once
// HOST:PORT as every flag takes it (the host's own network facts: platform/net.hpp).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::net {

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
