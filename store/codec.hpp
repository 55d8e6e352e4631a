#pragma once
// Bytes <-> values for the TCPStore protocol. Pure: no sockets, no clocks.
//
// A request has no envelope: an opcode byte, then self-describing fields (u64-length-prefixed
// strings, little-endian integers). torch 1.13 clients send one request in many small writes, and a
// big request arrives over many reads, so the parser is incremental: a RequestParser per connection
// is fed whatever has arrived and keeps where it stopped (the field it is in and that field's bytes
// so far), so every byte is examined once however the request is split; it says Complete, NeedMore
// or Error. A field's length is checked against the limits before any of its bytes are stored, and
// its storage grows only with the bytes that really arrived.
#include <array>
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

// One connection's parser: feed() takes bytes in arrival order and resumes where the last call
// stopped, so the work is linear in the bytes however they are split.
class RequestParser {
 public:
  RequestParser(Dialect dialect, const Limits& limits);

  // Takes bytes from the front of `data`. Complete: `out` holds the request and `consumed` says how
  // many bytes of `data` it used (the rest begins the next request: feed them again). NeedMore:
  // every byte was taken and kept. Error: the connection must be closed; the parser stays failed.
  ParseResult feed(std::string_view data, Request& out);

  // Bytes of the request in progress taken so far (0 between requests): what this connection
  // holds in memory until its request is complete.
  std::size_t pending_bytes() const { return pending_; }
  // Bytes taken since construction, each counted once: parse work is linear in this.
  std::uint64_t bytes_examined() const { return examined_; }
  bool failed() const { return !error_.empty(); }

 private:
  enum class Field : std::uint8_t { None, U32, I64, Count, Key, Value };

  void begin(Op op);
  Field current() const;
  void advance();
  bool fail(std::string msg);
  // Consumes bytes of the current field from data[pos...]; false: more bytes needed (or failed).
  bool field(std::string_view data, std::size_t& pos);
  bool string_field(std::string_view data, std::size_t& pos, Field f);

  Dialect dialect_;
  Limits limits_;
  Request cur_;
  bool in_request_ = false;
  std::array<Field, 3> fixed_{};  // the fields every request of this op has, in order
  std::size_t nfixed_ = 0;
  std::array<Field, 2> repeat_{};  // then, after a Count field, this group `items_left_` times
  std::size_t nrepeat_ = 0;
  std::size_t step_ = 0;  // index in fixed_, then nfixed_ + index in repeat_
  std::uint64_t items_left_ = 0;
  std::array<char, 8> num_{};  // an integer or a length field's bytes so far
  std::size_t num_have_ = 0;
  bool in_string_ = false;  // a string's length is read; its bytes go to target_
  std::uint64_t str_left_ = 0;
  std::string* target_ = nullptr;
  std::size_t pending_ = 0;
  std::uint64_t examined_ = 0;
  std::string error_;
};

// Tries to parse one request from the start of `buf` (a fresh RequestParser fed `buf`).
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
