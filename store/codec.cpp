#include "store/codec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <stdexcept>

namespace ddp::store {
namespace {

std::uint64_t get_le(const std::array<char, 8>& b, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = width; i-- > 0;) v = (v << 8) | static_cast<std::uint8_t>(b[i]);
  return v;
}

}  // namespace

RequestParser::RequestParser(Dialect dialect, const Limits& limits) : dialect_(dialect), limits_(limits) {}

void RequestParser::begin(Op op) {
  cur_.op = op;
  cur_.keys.clear();
  cur_.values.clear();
  cur_.number = 0;
  cur_.u32 = 0;
  in_request_ = true;
  step_ = 0;
  items_left_ = 0;
  num_have_ = 0;
  in_string_ = false;
  target_ = nullptr;
  nfixed_ = 0;
  nrepeat_ = 0;
  auto fixed = [&](std::initializer_list<Field> fs) {
    for (Field f : fs) fixed_[nfixed_++] = f;
  };
  auto repeat = [&](std::initializer_list<Field> fs) {
    for (Field f : fs) repeat_[nrepeat_++] = f;
  };
  switch (op) {
    case Op::Validate:
    case Op::Ping: fixed({Field::U32}); break;
    case Op::Set:
    case Op::Append:
    case Op::QueuePush: fixed({Field::Key, Field::Value}); break;
    case Op::CompareSet: fixed({Field::Key, Field::Value, Field::Value}); break;
    case Op::Get:
    case Op::DeleteKey:
    case Op::WatchKey:
    case Op::QueuePop:
    case Op::QueueLen: fixed({Field::Key}); break;
    case Op::Add:
    case Op::Barrier: fixed({Field::Key, Field::I64}); break;
    case Op::Check:
    case Op::Wait:
    case Op::MultiGet:
      fixed({Field::Count});
      repeat({Field::Key});
      break;
    case Op::MultiSet:
      fixed({Field::Count});
      repeat({Field::Key, Field::Value});
      break;
    case Op::NumKeys:
    case Op::CancelWait:
    case Op::ListKeys: break;
  }
}

RequestParser::Field RequestParser::current() const {
  if (step_ < nfixed_) return fixed_[step_];
  if (nrepeat_ > 0 && items_left_ > 0) return repeat_[step_ - nfixed_];
  return Field::None;
}

void RequestParser::advance() {
  ++step_;
  if (step_ > nfixed_ && step_ == nfixed_ + nrepeat_) {  // one item of the repeated group done
    step_ = nfixed_;
    --items_left_;
  }
}

bool RequestParser::fail(std::string msg) {
  if (error_.empty()) error_ = in_request_ ? fmt::format("{}: {}", op_name(cur_.op), msg) : std::move(msg);
  return false;
}

bool RequestParser::field(std::string_view data, std::size_t& pos) {
  const Field f = current();
  if (f == Field::Key || f == Field::Value) return string_field(data, pos, f);
  const std::size_t width = f == Field::U32 ? 4 : 8;
  const std::size_t n = std::min(width - num_have_, data.size() - pos);
  std::memcpy(num_.data() + num_have_, data.data() + pos, n);
  num_have_ += n;
  pos += n;
  pending_ += n;
  if (num_have_ < width) return false;
  num_have_ = 0;
  const std::uint64_t v = get_le(num_, width);
  switch (f) {
    case Field::U32: cur_.u32 = static_cast<std::uint32_t>(v); break;
    case Field::I64: cur_.number = static_cast<std::int64_t>(v); break;
    default:  // Count
      if (v > limits_.max_keys_per_request) {
        return fail(fmt::format("{} keys in one request exceeds the limit of {}", v, limits_.max_keys_per_request));
      }
      items_left_ = v;
      // Room for what a few reads bring, not for what the count claims: storage follows the bytes.
      cur_.keys.reserve(static_cast<std::size_t>(std::min<std::uint64_t>(v, 1024)));
      break;
  }
  advance();
  return true;
}

bool RequestParser::string_field(std::string_view data, std::size_t& pos, Field f) {
  if (!in_string_) {
    const std::size_t n = std::min(8 - num_have_, data.size() - pos);
    std::memcpy(num_.data() + num_have_, data.data() + pos, n);
    num_have_ += n;
    pos += n;
    pending_ += n;
    if (num_have_ < 8) return false;
    num_have_ = 0;
    const std::uint64_t len = get_le(num_, 8);
    const bool is_key = f == Field::Key;
    const std::size_t max = is_key ? limits_.max_key_bytes : limits_.max_value_bytes;
    if (len > max) {
      return fail(fmt::format("{} of {} bytes exceeds the limit of {} bytes", is_key ? "key" : "value", len, max));
    }
    // pending_ - 1: the fields so far, without the opcode byte.
    if (pending_ - 1 + len > limits_.max_request_bytes) {
      return fail(fmt::format("request larger than the limit of {} bytes", limits_.max_request_bytes));
    }
    auto& list = is_key ? cur_.keys : cur_.values;
    target_ = &list.emplace_back();
    in_string_ = true;
    str_left_ = len;
  }
  const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(str_left_, data.size() - pos));
  target_->append(data.data() + pos, n);
  pos += n;
  pending_ += n;
  str_left_ -= n;
  if (str_left_ > 0) return false;
  in_string_ = false;
  target_ = nullptr;
  advance();
  return true;
}

ParseResult RequestParser::feed(std::string_view data, Request& out) {
  ParseResult result;
  std::size_t pos = 0;
  auto finish = [&](ParseStatus status) {
    examined_ += pos;
    result.status = status;
    if (status == ParseStatus::Error) result.error = error_;
    if (status == ParseStatus::Complete) result.consumed = pos;
    return result;
  };
  if (failed()) return finish(ParseStatus::Error);
  if (!in_request_) {
    if (data.empty()) return result;
    const auto byte = static_cast<std::uint8_t>(data[0]);
    pos = 1;
    auto op = decode_opcode(dialect_, byte);
    if (!op) {
      fail(fmt::format("unknown opcode {} in {}", byte, dialect_name(dialect_)));
      return finish(ParseStatus::Error);
    }
    begin(*op);
    pending_ = 1;
  }
  while (current() != Field::None) {
    if (!field(data, pos)) return finish(failed() ? ParseStatus::Error : ParseStatus::NeedMore);
  }
  out = std::move(cur_);
  in_request_ = false;
  pending_ = 0;
  return finish(ParseStatus::Complete);
}

ParseResult parse_request(std::string_view buf, Dialect dialect, const Limits& limits, Request& out) {
  RequestParser parser(dialect, limits);
  return parser.feed(buf, out);
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
    throw std::invalid_argument(fmt::format("{} does not exist in {}", op_name(req.op), dialect_name(dialect)));
  }
  auto need_fields = [&](std::size_t keys, std::size_t values) {
    if (req.keys.size() < keys || req.values.size() < values) {
      throw std::invalid_argument(fmt::format("{} needs {} key(s) and {} value(s)", op_name(req.op), keys, values));
    }
  };
  put_u8(out, *opcode);
  switch (req.op) {
    case Op::Validate:
    case Op::Ping: put_u32(out, req.u32); break;
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
    case Op::ListKeys: break;
  }
}

}  // namespace ddp::store
