#pragma once
// Bytes <-> values for the TCPStore protocol. Pure: no sockets, no clocks.
//
// A request has no envelope: an opcode byte, then self-describing fields (u64-length-prefixed
// strings, little-endian integers). torch 1.13 clients send one request in many small writes, so
// the parser is incremental: give it whatever has arrived; it says Complete, NeedMore or Error.
// It never allocates for a field before checking that field's length against the limits and
// that all of its bytes have arrived.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "store/protocol.hpp"

namespace ddp::store {

struct Request {
  Op op = Op::Set;
  std::vector<std::string> keys;    // the key, or the key list (CHECK, WAIT, MULTI_GET, MULTI_SET)
  std::vector<std::string> values;  // SET/APPEND/QUEUE_PUSH: [value]; COMPARE_SET: [expected,
                                    // desired]; MULTI_SET: one per key
  std::int64_t number = 0;          // ADD delta, BARRIER world size
  std::uint32_t u32 = 0;            // VALIDATE magic, PING nonce
};

enum class ParseStatus { Complete, NeedMore, Error };

struct ParseResult {
  ParseStatus status = ParseStatus::NeedMore;
  std::size_t consumed = 0;  // bytes of `buf` the request used (Complete only)
  std::string error;         // what was wrong (Error only): names the field and the limit
};

// Tries to parse one request from the start of `buf`.
ParseResult parse_request(std::string_view buf, Dialect dialect, const Limits& limits, Request& out);

// Dialect sniffing on the first bytes of a connection (spec §6): `00 CE F7 85 3C` is a dialect-C
// VALIDATE; anything else is the legacy numbering (A or B, which the wire cannot tell apart).
struct Sniff {
  bool decided = false;          // false: not enough bytes yet
  Dialect dialect = Dialect::A;  // when decided
};
Sniff sniff_dialect(std::string_view first_bytes, Dialect legacy);

// Request encoding (clients, tests, load generators). Throws std::invalid_argument when the
// dialect has no such operation.
void encode_request(Dialect dialect, const Request& req, std::string& out);

// Reply and field encoding (little-endian, strings as u64 length + bytes).
void put_u8(std::string& out, std::uint8_t v);
void put_u32(std::string& out, std::uint32_t v);
void put_i64(std::string& out, std::int64_t v);
void put_u64(std::string& out, std::uint64_t v);
void put_bytes(std::string& out, std::string_view bytes);

// Little-endian reads from a buffer known to be long enough.
std::uint32_t get_u32(const char* p);
std::uint64_t get_u64(const char* p);

}  // namespace ddp::store
