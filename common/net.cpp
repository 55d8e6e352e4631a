#include "common/net.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <string>

#include <fmt/format.h>

namespace ddp::net {
namespace {

bool is_loopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    auto a = ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr);
    return (a >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    const auto* a6 = reinterpret_cast<const sockaddr_in6*>(sa);
    return IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr) != 0;
  }
  return false;
}

bool same_address(const sockaddr* a, const sockaddr* b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET) {
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  }
  if (a->sa_family == AF_INET6) {
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, sizeof(in6_addr)) == 0;
  }
  return false;
}

}  // namespace

std::optional<std::string> interface_towards(const std::string& host, std::uint16_t port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0 || !res) return std::nullopt;
  std::optional<std::string> found;
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  int fd = ::socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  bool ok = fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0;
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  if (!ok) return std::nullopt;
  ifaddrs* ifs = nullptr;
  if (::getifaddrs(&ifs) != 0) return std::nullopt;
  for (auto* i = ifs; i; i = i->ifa_next) {
    if (i->ifa_addr && same_address(i->ifa_addr, reinterpret_cast<const sockaddr*>(&local))) {
      found = i->ifa_name;
      break;
    }
  }
  ::freeifaddrs(ifs);
  return found;
}

bool hostname_is_loopback() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return true;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(name, nullptr, &hints, &res) != 0 || !res) return true;
  bool all_loopback = true;
  for (auto* r = res; r; r = r->ai_next) all_loopback = all_loopback && is_loopback(r->ai_addr);
  ::freeaddrinfo(res);
  return all_loopback;
}

namespace {

// The port text after the colon, checked against rules.min_port..65535.
std::optional<std::uint16_t> port_of(std::string_view text, std::uint16_t min_port) {
  unsigned value = 0;
  if (text.empty() || text.size() > 5) return std::nullopt;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  if (value < min_port || value > 65535) return std::nullopt;
  return static_cast<std::uint16_t>(value);
}

}  // namespace

HostPortResult parse_host_port(std::string_view text, HostPortRules rules) {
  auto fail = [](std::string why) { return HostPortResult{std::nullopt, std::move(why)}; };
  std::string_view host = text;
  std::optional<std::string_view> port;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return fail("'[' without ']': write an IPv6 host as [ADDR]");
    host = text.substr(1, close - 1);
    auto rest = text.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return fail(fmt::format("'{}' after [{}]: give [ADDR]:PORT", rest, host));
    if (!rest.empty()) port = rest.substr(1);
  } else if (auto colon = text.rfind(':'); colon != std::string_view::npos) {
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) return fail("write an IPv6 host as [ADDR]");
  }
  if (host.empty()) return fail("no host");
  HostPort out{std::string(host), std::nullopt};
  if (!port) {
    if (rules.port_required) return fail("no port");
    return {out, ""};
  }
  out.port = port_of(*port, rules.min_port);
  if (!out.port) return fail(fmt::format("'{}' is not a port number ({}..65535)", *port, rules.min_port));
  return {out, ""};
}

}  // namespace ddp::net
