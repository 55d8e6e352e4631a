#include "common/net.hpp"

#include <fmt/format.h>

#include <charconv>
#include <string>

namespace ddp::net {
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
