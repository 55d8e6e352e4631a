// platform/resolve.hpp: Boost.Asio's resolver (getaddrinfo on both systems) and a TCP bind per address.
#include "platform/resolve.hpp"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace asio = boost::asio;

namespace ddp::platform {
namespace {

bool is_unusable(const asio::ip::address& a) {
  if (a.is_unspecified()) return true;
  if (a.is_v4()) return (a.to_v4().to_uint() >> 16) == ((169u << 8) | 254u);  // 169.254/16
  return a.to_v6().is_link_local();
}

}  // namespace

HostResolution resolve_host(const std::string& host) {
  HostResolution out;
  asio::io_context io;
  asio::ip::tcp::resolver resolver(io);
  boost::system::error_code ec;
  auto results = resolver.resolve(host, "", ec);
  if (ec) {
    out.error = ec.message();
    return out;
  }
  for (const auto& entry : results) {
    const auto a = entry.endpoint().address();
    HostAddress h;
    h.address = a.to_string();
    if (std::any_of(out.addresses.begin(), out.addresses.end(),
                    [&](const HostAddress& seen) { return seen.address == h.address; })) {
      continue;
    }
    h.v4 = a.is_v4();
    h.loopback = a.is_loopback();
    h.unusable = is_unusable(a);
    // A TCP socket, as gloo binds (Wine binds a UDP socket to an address no interface holds).
    asio::ip::tcp::acceptor probe(io);
    boost::system::error_code bind_ec;
    probe.open(a.is_v4() ? asio::ip::tcp::v4() : asio::ip::tcp::v6(), bind_ec);
    if (!bind_ec) probe.bind(asio::ip::tcp::endpoint(a, 0), bind_ec);
    h.local = !bind_ec;
    if (bind_ec) h.bind_error = bind_ec.message();
    out.addresses.push_back(std::move(h));
  }
  if (out.addresses.empty()) out.error = "no address";
  return out;
}

std::optional<std::string> numeric_address(const HostResolution& r, std::string* why) {
  for (bool v4 : {true, false}) {
    for (const auto& a : r.addresses) {
      if (a.v4 == v4 && !a.unusable) return a.address;
    }
  }
  if (why) {
    *why = !r.error.empty() ? r.error : "only unspecified or link-local addresses";
  }
  return std::nullopt;
}

}  // namespace ddp::platform
