#include "store/codec.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

namespace ddp::store {
namespace {

// A cursor over the received bytes. Every read first checks that the bytes are there; a length
// field is checked against its limit before anything is allocated for it.
class Reader {
 public:
  Reader(std::string_view buf, const Limits& limits) : buf_(buf), limits_(limits) {}

  bool need_more() const { return need_more_; }
  bool failed() const { return !error_.empty(); }
  const std::string& error() const { return error_; }
  std::size_t pos() const { return pos_; }
  bool ok() const { return !need_more_ && error_.empty(); }

  bool u8(std::uint8_t& v) {
    if (!have(1)) return false;
    v = static_cast<std::uint8_t>(buf_[pos_++]);
    return true;
  }
  bool u32(std::uint32_t& v) {
    if (!have(4)) return false;
    v = get_u32(buf_.data() + pos_);
    pos_ += 4;
    return true;
  }
  bool u64(std::uint64_t& v) {
    if (!have(8)) return false;
    v = get_u64(buf_.data() + pos_);
    pos_ += 8;
    return true;
  }
  bool i64(std::int64_t& v) {
    std::uint64_t raw = 0;
    if (!u64(raw)) return false;
    v = static_cast<std::int64_t>(raw);
    return true;
  }
  // A u64-length-prefixed string whose length must not exceed `max` (`what` names it in errors).
  bool str(std::string& out, std::size_t max, const char* what) {
    std::uint64_t len = 0;
    if (!u64(len)) return false;
    if (len > max) return fail(fmt::format("{} of {} bytes exceeds the limit of {} bytes", what, len, max));
    if (pos_ + len > limits_.max_request_bytes) {
      return fail(fmt::format("request larger than the limit of {} bytes", limits_.max_request_bytes));
    }
    if (!have(static_cast<std::size_t>(len))) return false;
    out.assign(buf_.data() + pos_, static_cast<std::size_t>(len));
    pos_ += static_cast<std::size_t>(len);
    return true;
  }
  bool key(std::string& out) { return str(out, limits_.max_key_bytes, "key"); }
  bool value(std::string& out) { return str(out, limits_.max_value_bytes, "value"); }
  // A key count (u64 or i64 on the wire) checked against max_keys_per_request.
  bool count(std::uint64_t& n) {
    if (!u64(n)) return false;
    if (n > limits_.max_keys_per_request) {
      return fail(fmt::format("{} keys in one request exceeds the limit of {}", n,
                              limits_.max_keys_per_request));
    }
    return true;
  }
  bool fail(std::string msg) {
    if (error_.empty()) error_ = std::move(msg);
    return false;
  }

 private:
  bool have(std::size_t n) {
    if (buf_.size() - pos_ >= n) return true;
    need_more_ = true;
    return false;
  }

  std::string_view buf_;
  const Limits& limits_;
  std::size_t pos_ = 0;
  bool need_more_ = false;
  std::string error_;
};

bool parse_key_list(Reader& r, Request& out) {
  std::uint64_t n = 0;
  if (!r.count(n)) return false;
  out.keys.clear();
  out.keys.reserve(static_cast<std::size_t>(n));
  for (std::uint64_t i = 0; i < n; ++i) {
    out.keys.emplace_back();
    if (!r.key(out.keys.back())) return false;
  }
  return true;
}

bool parse_body(Reader& r, Request& out) {
  out.keys.clear();
  out.values.clear();
  switch (out.op) {
    case Op::Validate:
    case Op::Ping:
      return r.u32(out.u32);
    case Op::Set:
    case Op::Append:
    case Op::QueuePush:
      out.keys.resize(1);
      out.values.resize(1);
      return r.key(out.keys[0]) && r.value(out.values[0]);
    case Op::CompareSet:
      out.keys.resize(1);
      out.values.resize(2);
      return r.key(out.keys[0]) && r.value(out.values[0]) && r.value(out.values[1]);
    case Op::Get:
    case Op::DeleteKey:
    case Op::WatchKey:
    case Op::QueuePop:
    case Op::QueueLen:
      out.keys.resize(1);
      return r.key(out.keys[0]);
    case Op::Add:
    case Op::Barrier:
      out.keys.resize(1);
      return r.key(out.keys[0]) && r.i64(out.number);
    case Op::Check:
    case Op::Wait:
    case Op::MultiGet:
      return parse_key_list(r, out);
    case Op::MultiSet: {
      std::uint64_t n = 0;
      if (!r.count(n)) return false;
      out.keys.reserve(static_cast<std::size_t>(n));
      out.values.reserve(static_cast<std::size_t>(n));
      for (std::uint64_t i = 0; i < n; ++i) {
        out.keys.emplace_back();
        out.values.emplace_back();
        if (!r.key(out.keys.back()) || !r.value(out.values.back())) return false;
      }
      return true;
    }
    case Op::NumKeys:
    case Op::CancelWait:
    case Op::ListKeys:
      return true;
  }
  return false;
}

}  // namespace

ParseResult parse_request(std::string_view buf, Dialect dialect, const Limits& limits, Request& out) {
  ParseResult result;
  if (buf.empty()) return result;
  auto byte = static_cast<std::uint8_t>(buf[0]);
  auto op = decode_opcode(dialect, byte);
  if (!op) {
    result.status = ParseStatus::Error;
    result.error = fmt::format("unknown opcode {} in {}", byte, dialect_name(dialect));
    return result;
  }
  out.op = *op;
  Reader r(buf.substr(1), limits);
  parse_body(r, out);
  if (r.failed()) {
    result.status = ParseStatus::Error;
    result.error = fmt::format("{}: {}", op_name(*op), r.error());
  } else if (r.need_more()) {
    result.status = ParseStatus::NeedMore;
  } else {
    result.status = ParseStatus::Complete;
    result.consumed = 1 + r.pos();
  }
  return result;
}

Sniff sniff_dialect(std::string_view first, Dialect legacy) {
  static constexpr char kValidate[] = {'\x00', '\xCE', '\xF7', '\x85', '\x3C'};
  if (first.empty()) return {};
  if (first[0] != '\x00') return {true, legacy};
  std::size_t n = std::min(first.size(), sizeof(kValidate));
  if (std::memcmp(first.data(), kValidate, n) != 0) return {true, legacy};
  if (n < sizeof(kValidate)) return {};  // a prefix of VALIDATE so far: wait for 5 bytes
  return {true, Dialect::C};
}

void put_u8(std::string& out, std::uint8_t v) { out.push_back(static_cast<char>(v)); }

void put_u32(std::string& out, std::uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(b, 4);
}

void put_u64(std::string& out, std::uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out.append(b, 8);
}

void put_i64(std::string& out, std::int64_t v) { put_u64(out, static_cast<std::uint64_t>(v)); }

void put_bytes(std::string& out, std::string_view bytes) {
  put_u64(out, bytes.size());
  out.append(bytes);
}

std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

std::uint64_t get_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

void encode_request(Dialect dialect, const Request& req, std::string& out) {
  auto opcode = encode_opcode(dialect, req.op);
  if (!opcode) {
    throw std::invalid_argument(
        fmt::format("{} does not exist in {}", op_name(req.op), dialect_name(dialect)));
  }
  auto need_fields = [&](std::size_t keys, std::size_t values) {
    if (req.keys.size() < keys || req.values.size() < values) {
      throw std::invalid_argument(fmt::format("{} needs {} key(s) and {} value(s)", op_name(req.op), keys, values));
    }
  };
  put_u8(out, *opcode);
  switch (req.op) {
    case Op::Validate:
    case Op::Ping:
      put_u32(out, req.u32);
      break;
    case Op::Set:
    case Op::Append:
    case Op::QueuePush:
      need_fields(1, 1);
      put_bytes(out, req.keys[0]);
      put_bytes(out, req.values[0]);
      break;
    case Op::CompareSet:
      need_fields(1, 2);
      put_bytes(out, req.keys[0]);
      put_bytes(out, req.values[0]);
      put_bytes(out, req.values[1]);
      break;
    case Op::Get:
    case Op::DeleteKey:
    case Op::WatchKey:
    case Op::QueuePop:
    case Op::QueueLen:
      need_fields(1, 0);
      put_bytes(out, req.keys[0]);
      break;
    case Op::Add:
    case Op::Barrier:
      need_fields(1, 0);
      put_bytes(out, req.keys[0]);
      put_i64(out, req.number);
      break;
    case Op::Check:
    case Op::Wait:
    case Op::MultiGet:
      put_u64(out, req.keys.size());
      for (const auto& k : req.keys) put_bytes(out, k);
      break;
    case Op::MultiSet:
      need_fields(req.keys.size(), req.keys.size());
      put_u64(out, req.keys.size());
      for (std::size_t i = 0; i < req.keys.size(); ++i) {
        put_bytes(out, req.keys[i]);
        put_bytes(out, req.values[i]);
      }
      break;
    case Op::NumKeys:
    case Op::CancelWait:
    case Op::ListKeys:
      break;
  }
}

}  // namespace ddp::store
