#pragma once
// The API's admission rules, pure (no sockets): who may hold a TCP connection and for how long,
// how many at once, and what a bearer credential is. ApiServer applies them.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddp::jobs {

// What TCP clients may hold. The unix socket (its owner) is never capped: the TCP cap keeps enough
// descriptors free for it and the jobs, so a flood of TCP connections cannot lock the owner out.
struct ApiLimits {
  std::size_t max_tcp_connections = 256;  // beyond: answered 503 and closed at once
  // A TCP connection must send an authenticated request within this; else it is closed (and
  // after a 401 at once), so idle unauthenticated connections do not pile up.
  std::chrono::milliseconds tcp_auth_timeout{10000};
};

inline constexpr std::size_t kReservedDescriptors = 64;  // unix clients, jobs, database, inotify

// --max-tcp-connections for a process that may open `open_file_limit` descriptors: by default
// half of them, at most 1024; an explicit cap must leave kReservedDescriptors (else a
// ddp::UsageError naming the flag, the limit and the largest cap that fits).
std::size_t tcp_connection_cap(std::uint64_t open_file_limit, std::optional<std::size_t> explicit_cap);

// The credentials of an `Authorization: Bearer <token>` header: the scheme in any case (RFC 7235
// §2.1), one or more spaces, the token; nullopt for another scheme or none.
std::optional<std::string> bearer_credentials(std::string_view header);

// The time taken does not depend on where the strings differ (only on their length); an empty
// expected value never matches.
bool constant_time_equal(const std::string& presented, const std::string& expected);

}  // namespace ddp::jobs
