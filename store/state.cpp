#include "store/state.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

namespace ddp::store {
namespace {

// C stoll semantics as torch's server uses them: leading whitespace, optional sign, digits;
// trailing junk ignored. nullopt when there are no digits or the number overflows.
std::optional<std::int64_t> parse_decimal(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  bool negative = false;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  std::size_t digits_start = i;
  // Accumulate as a negative number so INT64_MIN parses.
  std::int64_t value = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
    int d = s[i] - '0';
    if (value < (std::numeric_limits<std::int64_t>::min() + d) / 10) return std::nullopt;
    value = value * 10 - d;
  }
  if (i == digits_start) return std::nullopt;
  if (!negative) {
    if (value == std::numeric_limits<std::int64_t>::min()) return std::nullopt;
    value = -value;
  }
  return value;
}

std::string printable(std::string_view key) {
  std::string out;
  for (char ch : key.substr(0, 64)) {
    auto u = static_cast<unsigned char>(ch);
    out += (u >= 0x20 && u < 0x7f) ? std::string(1, ch) : fmt::format("\\x{:02x}", u);
  }
  if (key.size() > 64) out += "...";
  return out;
}

}  // namespace

StoreState::StoreState(Limits limits, StateOptions options) : limits_(limits), options_(options) {}

void StoreState::connect(ConnId conn, Dialect dialect) { conns_[conn].dialect = dialect; }

void StoreState::disconnect(ConnId conn) {
  auto it = conns_.find(conn);
  if (it == conns_.end()) return;
  cancel_wait(it->second);
  for (const auto& key : it->second.watched) {
    auto w = watchers_.find(key);
    if (w == watchers_.end()) continue;
    std::erase(w->second, conn);
    if (w->second.empty()) watchers_.erase(w);
  }
  conns_.erase(it);
  if (conn_observer_.closed) conn_observer_.closed(conn);
}

void StoreState::reset() {
  for (auto& [id, c] : conns_) {
    c.generation++;
    c.pending = 0;
    c.registered.clear();
    c.watched.clear();
  }
  kv_.clear();
  queues_.clear();
  waits_.clear();
  watchers_.clear();
  total_bytes_ = 0;
}

std::size_t StoreState::waiting_connections() const {
  return static_cast<std::size_t>(
      std::count_if(conns_.begin(), conns_.end(), [](const auto& kv) { return kv.second.pending > 0; }));
}

std::optional<std::string_view> StoreState::value(std::string_view key) const {
  auto it = kv_.find(std::string(key));
  if (it == kv_.end()) return std::nullopt;
  return std::string_view(it->second);
}

void StoreState::handle(ConnId conn, Request& req, Outbox& out) {
  auto& c = conns_.at(conn);
  if (conn_observer_.named) {
    for (const auto& k : req.keys) conn_observer_.named(conn, k);
  }
  if (c.pending > 0 && req.op != Op::CancelWait && req.op != Op::Ping && c.dialect != Dialect::C &&
      options_.drop_stale_waits) {
    cancel_wait(c);  // the client gave up on that WAIT (SO_RCVTIMEO) without telling us
  }
  scratch_.clear();
  switch (req.op) {
    case Op::Set: return op_set(conn, req, out);
    case Op::CompareSet: return op_compare_set(conn, req, out);
    case Op::Get: return op_get(conn, req, out);
    case Op::Add: return op_add(conn, req, out);
    case Op::Check: return op_check(conn, req, out);
    case Op::Wait: return op_wait(conn, req, out);
    case Op::NumKeys: return op_num_keys(conn, req, out);
    case Op::WatchKey: return op_watch_key(conn, req, out);
    case Op::DeleteKey: return op_delete_key(conn, req, out);
    case Op::Append: return op_append(conn, req, out);
    case Op::MultiGet: return op_multi_get(conn, req, out);
    case Op::MultiSet: return op_multi_set(conn, req, out);
    case Op::CancelWait: return op_cancel_wait(conn, req, out);
    case Op::Ping: return op_ping(conn, req, out);
    case Op::QueuePush: return op_queue_push(conn, req, out);
    case Op::QueuePop: return op_queue_pop(conn, req, out);
    case Op::QueueLen: return op_queue_len(conn, req, out);
    case Op::ListKeys: return op_list_keys(conn, req, out);
    case Op::Barrier: return op_barrier(conn, req, out);
    case Op::Validate:
      // The connection's first VALIDATE is consumed by dialect detection; torch closes on a second.
      return out.close(conn, "VALIDATE sent twice on one connection");
  }
}

// ---- handlers ----

void StoreState::op_set(ConnId conn, Request& req, Outbox& out) {
  store_value(conn, std::move(req.keys[0]), std::move(req.values[0]), out);
}

void StoreState::op_compare_set(ConnId conn, Request& req, Outbox& out) {
  const std::string& key = req.keys[0];
  const std::string& expected = req.values[0];
  std::string& desired = req.values[1];
  auto it = kv_.find(key);
  if (it == kv_.end()) {
    if (!expected.empty()) {
      put_bytes(scratch_, expected);  // torch's quirk: the absent key "has" the expected value
      return reply(conn, out);
    }
  } else if (it->second != expected) {
    put_bytes(scratch_, it->second);
    return reply(conn, out);
  }
  put_bytes(scratch_, desired);
  std::string key_copy = key;
  if (!store_value(conn, std::move(key_copy), std::move(desired), out, options_.compare_set_wakes)) return;
  reply(conn, out);
}

void StoreState::op_get(ConnId conn, Request& req, Outbox& out) {
  // Clients always WAIT before GET. An absent key gets an empty value (libuv server) rather than
  // torch 1.13's closed connection.
  auto it = kv_.find(req.keys[0]);
  put_bytes(scratch_, it == kv_.end() ? std::string_view() : std::string_view(it->second));
  reply(conn, out);
}

void StoreState::op_add(ConnId conn, Request& req, Outbox& out) {
  auto value = add_to(conn, req.keys[0], req.number, out);
  if (!value) return;
  scratch_.clear();
  put_i64(scratch_, *value);
  reply(conn, out);
  wake(req.keys[0], out);
}

void StoreState::op_check(ConnId conn, Request& req, Outbox& out) {
  bool all = std::all_of(req.keys.begin(), req.keys.end(), [&](const std::string& k) { return present(k); });
  put_u8(scratch_, all ? kCheckReady : kCheckNotReady);
  reply(conn, out);
}

void StoreState::op_wait(ConnId conn, Request& req, Outbox& out) {
  auto& c = conns_.at(conn);
  // torch's server leaves a timed-out WAIT registered beside a new one: it answers a WAIT whose
  // keys all exist at once and otherwise overwrites the connection's count, so the old
  // registration can still release (or prematurely release) a later WAIT. --keep-stale-waits
  // reproduces that for legacy clients; otherwise never leave two waits.
  bool keep_stale = keeps_stale_waits(c);
  if (!keep_stale) cancel_wait(c);
  if (std::all_of(req.keys.begin(), req.keys.end(), [&](const std::string& k) { return present(k); })) {
    put_u8(scratch_, kStopWaiting);
    return reply(conn, out);
  }
  if (keep_stale) c.pending = 0;
  for (const auto& key : req.keys) {
    if (!present(key)) register_wait(conn, c, key);
  }
}

void StoreState::op_num_keys(ConnId conn, Request&, Outbox& out) {
  put_i64(scratch_, static_cast<std::int64_t>(kv_.size()));
  reply(conn, out);
}

void StoreState::op_watch_key(ConnId conn, Request& req, Outbox& out) {
  auto& list = watchers_[req.keys[0]];
  if (std::find(list.begin(), list.end(), conn) == list.end()) {
    list.push_back(conn);
    conns_.at(conn).watched.push_back(req.keys[0]);
  }
  put_u8(scratch_, kWatchRegistered);
  reply(conn, out);
}

void StoreState::op_delete_key(ConnId conn, Request& req, Outbox& out) {
  // Deleting does not touch waiters (spec §5.6).
  auto it = kv_.find(req.keys[0]);
  std::int64_t removed = 0;
  std::string old;
  if (it != kv_.end()) {
    total_bytes_ -= it->first.size() + it->second.size();
    old = std::move(it->second);
    kv_.erase(it);
    removed = 1;
  }
  put_i64(scratch_, removed);
  reply(conn, out);
  if (removed) notify_watchers(req.keys[0], kWatchKeyDeleted, old, {}, out);
}

void StoreState::op_append(ConnId conn, Request& req, Outbox& out) {
  auto it = kv_.find(req.keys[0]);
  if (it == kv_.end()) return op_set(conn, req, out);
  if (it->second.size() + req.values[0].size() > limits_.max_value_bytes) {
    return out.close(conn, fmt::format("APPEND would grow key '{}' past the value limit of {} bytes",
                                       printable(it->first), limits_.max_value_bytes));
  }
  if (!reserve_bytes(conn, req.values[0].size(), 0, out)) return;
  std::string old = watchers_.empty() ? std::string() : it->second;
  it->second += req.values[0];
  notify_watchers(it->first, kWatchKeyUpdated, old, it->second, out);
  if (observer_) observer_(it->first, it->second);
  wake(req.keys[0], out);
}

void StoreState::op_multi_get(ConnId conn, Request& req, Outbox& out) {
  // Keys may repeat: 131072 copies of one 8 MiB key would make a 1 TiB reply. A reply is held to
  // the limit a request has.
  std::size_t reply_bytes = 0;
  for (const auto& key : req.keys) {
    auto it = kv_.find(key);
    reply_bytes += 8 + (it == kv_.end() ? 0 : it->second.size());
  }
  if (reply_bytes > limits_.max_request_bytes) {
    return out.close(conn, fmt::format("MULTI_GET reply of {} bytes would pass the request limit of {} bytes",
                                       reply_bytes, limits_.max_request_bytes));
  }
  for (const auto& key : req.keys) {
    auto it = kv_.find(key);
    put_bytes(scratch_, it == kv_.end() ? std::string_view() : std::string_view(it->second));
  }
  reply(conn, out);
}

void StoreState::op_multi_set(ConnId conn, Request& req, Outbox& out) {
  for (std::size_t i = 0; i < req.keys.size(); ++i) {
    if (!store_value(conn, std::move(req.keys[i]), std::move(req.values[i]), out)) return;
  }
}

void StoreState::op_cancel_wait(ConnId conn, Request&, Outbox& out) {
  cancel_wait(conns_.at(conn));
  put_u8(scratch_, kWaitCanceled);  // answered even with nothing pending, as torch does
  reply(conn, out);
}

void StoreState::op_ping(ConnId conn, Request& req, Outbox& out) {
  put_u32(scratch_, req.u32);  // the nonce is the client's pid; a 2.x client hangs without it
  reply(conn, out);
}

void StoreState::op_queue_push(ConnId conn, Request& req, Outbox& out) {
  if (!reserve_bytes(conn, req.keys[0].size() + req.values[0].size(), 0, out)) return;
  queues_[req.keys[0]].push_back(std::move(req.values[0]));
  wake_one(req.keys[0], out);  // one item: one blocked pop may proceed
}

void StoreState::op_queue_pop(ConnId conn, Request& req, Outbox& out) {
  auto it = queues_.find(req.keys[0]);
  if (it == queues_.end() || it->second.empty()) {
    put_i64(scratch_, 0);
    return reply(conn, out);
  }
  put_i64(scratch_, static_cast<std::int64_t>(it->second.size()));
  put_bytes(scratch_, it->second.front());
  total_bytes_ -= it->first.size() + it->second.front().size();
  it->second.pop_front();
  if (it->second.empty()) queues_.erase(it);
  reply(conn, out);
}

void StoreState::op_queue_len(ConnId conn, Request& req, Outbox& out) {
  auto it = queues_.find(req.keys[0]);
  put_i64(scratch_, it == queues_.end() ? 0 : static_cast<std::int64_t>(it->second.size()));
  reply(conn, out);
}

void StoreState::op_list_keys(ConnId conn, Request&, Outbox& out) {
  put_i64(scratch_, static_cast<std::int64_t>(kv_.size()));
  for (const auto& [key, value] : kv_) put_bytes(scratch_, key);
  reply(conn, out);
}

void StoreState::op_barrier(ConnId conn, Request& req, Outbox& out) {
  // torch 2.14: the count grows like ADD 1 without waking anyone; the arrival that reaches the
  // world size is answered and releases every waiter on the key. Counts never reset.
  const std::string& key = req.keys[0];
  auto count = add_to(conn, key, 1, out);
  if (!count) return;
  auto& c = conns_.at(conn);
  if (*count >= req.number) {
    put_u8(scratch_, kStopWaiting);
    reply(conn, out);
    wake(key, out);
    return;
  }
  cancel_wait(c);
  register_wait(conn, c, key);
}

// ---- helpers ----

bool StoreState::present(const std::string& key) const {
  if (kv_.count(key)) return true;
  auto q = queues_.find(key);
  return q != queues_.end() && !q->second.empty();
}

bool StoreState::reserve_bytes(ConnId conn, std::size_t add, std::size_t remove, Outbox& out) {
  std::size_t next = total_bytes_ - remove + add;
  if (next > limits_.max_total_bytes) {
    out.close(conn, fmt::format("the store holds {} bytes and this write would pass its limit of {} bytes",
                                total_bytes_, limits_.max_total_bytes));
    return false;
  }
  total_bytes_ = next;
  return true;
}

bool StoreState::store_value(ConnId conn, std::string key, std::string value, Outbox& out, bool wake_waiters) {
  auto it = kv_.find(key);
  if (it == kv_.end()) {
    if (!reserve_bytes(conn, key.size() + value.size(), 0, out)) return false;
    it = kv_.emplace(std::move(key), std::move(value)).first;
    notify_watchers(it->first, kWatchKeyCreated, {}, it->second, out);
  } else {
    if (!reserve_bytes(conn, value.size(), it->second.size(), out)) return false;
    if (watchers_.empty()) {
      it->second = std::move(value);
    } else {
      std::string old = std::move(it->second);
      it->second = std::move(value);
      notify_watchers(it->first, kWatchKeyUpdated, old, it->second, out);
    }
  }
  if (observer_) observer_(it->first, it->second);
  if (wake_waiters) wake(it->first, out);
  return true;
}

std::optional<std::int64_t> StoreState::add_to(ConnId conn, const std::string& key, std::int64_t delta,
                                               Outbox& out) {
  std::int64_t current = 0;
  auto it = kv_.find(key);
  if (it != kv_.end()) {
    auto parsed = parse_decimal(it->second);
    if (!parsed) {
      out.close(conn, fmt::format("ADD on key '{}' whose value is not a number", printable(key)));
      return std::nullopt;
    }
    current = *parsed;
  }
  // torch's servers (1.13, 2.6, 2.14) compute stoll(value) + delta in int64 and hand the client the
  // wrapped two's-complement result; do the same, through unsigned arithmetic to stay defined.
  auto next = static_cast<std::int64_t>(static_cast<std::uint64_t>(current) + static_cast<std::uint64_t>(delta));
  if (!store_value(conn, key, std::to_string(next), out, /*wake_waiters=*/false)) return std::nullopt;
  return next;
}

void StoreState::register_wait(ConnId conn, Conn& c, const std::string& key) {
  auto [it, inserted] = waits_.try_emplace(key);
  WaitList& list = it->second;
  if (inserted) list.key = &it->first;
  // Keep stale entries (cancelled waits) from piling up: compact when they are the majority.
  if (list.entries.size() >= 32 && list.live * 2 < list.entries.size()) {
    std::erase_if(list.entries, [&](const Waiter& w) {
      auto cit = conns_.find(w.conn);
      return cit == conns_.end() || cit->second.generation != w.generation;
    });
  }
  list.entries.push_back({conn, c.generation});
  list.live++;
  c.pending++;
  c.registered.push_back(&list);
}

void StoreState::drop_registration(WaitList* list) {
  if (--list->live == 0) waits_.erase(waits_.find(*list->key));
}

void StoreState::cancel_wait(Conn& c) {
  if (c.registered.empty() && c.pending == 0) return;
  for (WaitList* list : c.registered) drop_registration(list);
  c.registered.clear();
  c.pending = 0;
  c.generation++;
}

void StoreState::finish_waiter(Conn& c, WaitList* list, ConnId conn, Outbox& out) {
  auto pos = std::find(c.registered.begin(), c.registered.end(), list);
  if (pos != c.registered.end()) c.registered.erase(pos);
  if (c.pending == 0) return;  // a kept stale registration after its WAIT finished: torch sends nothing
  if (--c.pending == 0) {
    // Normally no registrations remain; kept stale ones stay live, as torch's do.
    if (!keeps_stale_waits(c)) c.generation++;
    std::string byte(1, static_cast<char>(kStopWaiting));
    out.send(conn, byte);
  }
}

void StoreState::wake(const std::string& key, Outbox& out) {
  auto it = waits_.find(key);
  if (it == waits_.end()) return;
  std::vector<Waiter> entries = std::move(it->second.entries);
  WaitList* list = &it->second;
  // Each entry is one registration; the list goes away as a whole.
  for (const Waiter& w : entries) {
    auto cit = conns_.find(w.conn);
    if (cit == conns_.end() || cit->second.generation != w.generation) continue;
    finish_waiter(cit->second, list, w.conn, out);
  }
  waits_.erase(key);
}

void StoreState::wake_one(const std::string& key, Outbox& out) {
  auto it = waits_.find(key);
  if (it == waits_.end()) return;
  WaitList& list = it->second;
  // As torch's libuv server: the pushed item satisfies waiters in order until one of them has all
  // its keys (a multi-key wait that still misses others consumes this key but is not answered).
  for (std::size_t i = 0; i < list.entries.size();) {
    Waiter w = list.entries[i];
    auto cit = conns_.find(w.conn);
    if (cit == conns_.end() || cit->second.generation != w.generation) {
      ++i;
      continue;
    }
    list.entries.erase(list.entries.begin() + static_cast<std::ptrdiff_t>(i));
    WaitList* lp = &list;
    bool answered = cit->second.pending == 1;
    bool last = lp->live == 1;
    finish_waiter(cit->second, lp, w.conn, out);
    drop_registration(lp);  // erases the list when `last`
    if (answered || last) return;
  }
}

void StoreState::notify_watchers(const std::string& key, std::uint8_t type, std::string_view old_value,
                                 std::string_view new_value, Outbox& out) {
  if (watchers_.empty()) return;
  auto it = watchers_.find(key);
  if (it == watchers_.end()) return;
  std::string msg;
  put_u8(msg, type);
  put_bytes(msg, key);
  put_bytes(msg, old_value);
  put_bytes(msg, new_value);
  for (ConnId watcher : it->second) out.send(watcher, msg);
}

}  // namespace ddp::store
