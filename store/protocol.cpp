#include "store/protocol.hpp"

#include <array>

namespace ddp::store {
namespace {

// Index = opcode byte. Dialect C inserted VALIDATE at 0 and shifted everything else up by one.
constexpr std::array kDialectA = {Op::Set,     Op::CompareSet, Op::Get,     Op::Add,      Op::Check,
                                  Op::Wait,    Op::NumKeys,    Op::WatchKey, Op::DeleteKey};
constexpr std::array kDialectB = {Op::Set,      Op::CompareSet, Op::Get,    Op::Add,
                                  Op::Check,    Op::Wait,       Op::NumKeys, Op::DeleteKey,
                                  Op::Append,   Op::MultiGet,   Op::MultiSet, Op::CancelWait};
constexpr std::array kDialectC = {Op::Validate,  Op::Set,      Op::CompareSet, Op::Get,      Op::Add,
                                  Op::Check,     Op::Wait,     Op::NumKeys,    Op::DeleteKey, Op::Append,
                                  Op::MultiGet,  Op::MultiSet, Op::CancelWait, Op::Ping,      Op::QueuePush,
                                  Op::QueuePop,  Op::QueueLen, Op::ListKeys,   Op::Barrier};

template <std::size_t N>
std::optional<Op> lookup(const std::array<Op, N>& table, std::uint8_t byte) {
  if (byte < N) return table[byte];
  return std::nullopt;
}

template <std::size_t N>
std::optional<std::uint8_t> reverse(const std::array<Op, N>& table, Op op) {
  for (std::size_t i = 0; i < N; ++i) {
    if (table[i] == op) return static_cast<std::uint8_t>(i);
  }
  return std::nullopt;
}

}  // namespace

std::string_view dialect_name(Dialect d) {
  switch (d) {
    case Dialect::A: return "the torch 1.13/2.0 protocol";
    case Dialect::B: return "the torch 2.1 protocol";
    case Dialect::C: return "the torch >= 2.2 protocol";
  }
  return "?";
}

std::string_view op_name(Op op) {
  switch (op) {
    case Op::Validate: return "VALIDATE";
    case Op::Set: return "SET";
    case Op::CompareSet: return "COMPARE_SET";
    case Op::Get: return "GET";
    case Op::Add: return "ADD";
    case Op::Check: return "CHECK";
    case Op::Wait: return "WAIT";
    case Op::NumKeys: return "GETNUMKEYS";
    case Op::WatchKey: return "WATCH_KEY";
    case Op::DeleteKey: return "DELETE_KEY";
    case Op::Append: return "APPEND";
    case Op::MultiGet: return "MULTI_GET";
    case Op::MultiSet: return "MULTI_SET";
    case Op::CancelWait: return "CANCEL_WAIT";
    case Op::Ping: return "PING";
    case Op::QueuePush: return "QUEUE_PUSH";
    case Op::QueuePop: return "QUEUE_POP";
    case Op::QueueLen: return "QUEUE_LEN";
    case Op::ListKeys: return "LIST_KEYS";
    case Op::Barrier: return "BARRIER";
  }
  return "?";
}

std::optional<Op> decode_opcode(Dialect d, std::uint8_t byte) {
  switch (d) {
    case Dialect::A: return lookup(kDialectA, byte);
    case Dialect::B: return lookup(kDialectB, byte);
    case Dialect::C: return lookup(kDialectC, byte);
  }
  return std::nullopt;
}

std::optional<std::uint8_t> encode_opcode(Dialect d, Op op) {
  switch (d) {
    case Dialect::A: return reverse(kDialectA, op);
    case Dialect::B: return reverse(kDialectB, op);
    case Dialect::C: return reverse(kDialectC, op);
  }
  return std::nullopt;
}

}  // namespace ddp::store
