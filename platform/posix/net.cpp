// platform/net.hpp on POSIX: getaddrinfo, a connected UDP socket, getifaddrs.
#include "platform/net.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

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

}  // namespace ddp::net
