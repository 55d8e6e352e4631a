#pragma once
// The c10d TCPStore wire protocol: dialects, operations and their opcode numbers, limits.
// Facts come from ../shared/store-protocol.md (captured from real torch 1.13, 2.6 and 2.14 clients).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ddp::store {

// A: torch 1.13/2.0 (no handshake, two connections per client, WATCH_KEY).
// B: torch 2.1 (no handshake, CANCEL_WAIT, APPEND, MULTI_*), cannot be told apart from A on the
//    wire, so it is chosen by configuration.
// C: torch >= 2.2 (VALIDATE magic first, every opcode shifted up by one, PING, queues, LIST, BARRIER).
enum class Dialect : std::uint8_t { A, B, C };

std::string_view dialect_name(Dialect d);

enum class Op : std::uint8_t {
  Validate,
  Set,
  CompareSet,
  Get,
  Add,
  Check,
  Wait,
  NumKeys,
  WatchKey,
  DeleteKey,
  Append,
  MultiGet,
  MultiSet,
  CancelWait,
  Ping,
  QueuePush,
  QueuePop,
  QueueLen,
  ListKeys,
  Barrier,
};

std::string_view op_name(Op op);

// Opcode byte -> operation for a dialect; nullopt for a byte the dialect does not define.
std::optional<Op> decode_opcode(Dialect d, std::uint8_t byte);
// Operation -> opcode byte; nullopt when the dialect has no such operation.
std::optional<std::uint8_t> encode_opcode(Dialect d, Op op);

inline constexpr std::uint32_t kValidateMagic = 0x3C85F7CE;

// Reply enums.
inline constexpr std::uint8_t kCheckReady = 0;
inline constexpr std::uint8_t kCheckNotReady = 1;
inline constexpr std::uint8_t kStopWaiting = 0;
inline constexpr std::uint8_t kWaitCanceled = 1;
inline constexpr std::uint8_t kWatchKeyUpdated = 0;
inline constexpr std::uint8_t kWatchKeyCreated = 1;
inline constexpr std::uint8_t kWatchKeyDeleted = 2;
inline constexpr std::uint8_t kWatchRegistered = 3;

// Server limits. Defaults are those of torch's libuv server (spec §5.11) plus totals of our own.
// A client that exceeds one has its connection closed; everyone else carries on.
struct Limits {
  std::size_t max_key_bytes = 8192;
  std::size_t max_value_bytes = 8u << 20;  // 8 MiB
  std::size_t max_keys_per_request = 131072;
  std::size_t max_request_bytes = 64u << 20;  // one request, all fields together
  // Bytes of requests still arriving, all connections together: what a server buffers before it can
  // act. torch's own traffic stays far below (values of at most a few MiB: pickled rendezvous state,
  // NCCL ids of 128 bytes); a set of clients each streaming a huge request does not.
  std::size_t max_pending_bytes = 256u << 20;
  std::size_t max_total_bytes = 1u << 30;  // keys + values + queued items held by the store
  std::size_t max_connections = 65536;
};

}  // namespace ddp::store
