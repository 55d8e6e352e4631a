#pragma once
// A host name's addresses, as the ranks' libraries will see them: what the name resolves to and
// whether this machine holds each address (a socket can bind it). gloo on Windows binds the
// address its host name resolves to; one no interface holds fails with error 10049
// (WSAEADDRNOTAVAIL: pytorch#80638, a Docker Desktop hosts entry), so `run` gives the ranks a
// numeric MASTER_ADDR and `doctor` checks the host name. Portable (Boost.Asio's resolver and a
// TCP bind), so one file serves both systems.
#include <optional>
#include <string>
#include <vector>

namespace ddp::platform {

struct HostAddress {
  std::string address;  // numeric: 10.0.0.5, ::1
  bool v4 = false;
  bool loopback = false;
  bool unusable = false;   // unspecified (0.0.0.0, ::) or link-local (169.254/16, fe80::/10)
  bool local = false;      // this machine holds it: a TCP socket bound it
  std::string bind_error;  // why not, when !local
};

struct HostResolution {
  std::vector<HostAddress> addresses;  // in the resolver's order, duplicates dropped
  std::string error;                   // why the name did not resolve ("" when it did)
};

// Every address `host` resolves to (a numeric host is itself), each tried with a bind.
HostResolution resolve_host(const std::string& host);

// The address to hand the ranks for `host`: the first usable IPv4 one it resolves to, else the
// first usable IPv6 one (usable: neither unspecified nor link-local). nullopt with `why` when none.
std::optional<std::string> numeric_address(const HostResolution& r, std::string* why = nullptr);

}  // namespace ddp::platform
