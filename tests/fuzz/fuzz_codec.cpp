// libFuzzer harness for the store's pure core: dialect sniffing, the incremental request parser in
// every dialect, and StoreState's handlers fed with whatever parses.
//
// Input: one header byte, then the bytes of one connection as a client would send them.
//   bit 0    legacy dialect B instead of A (a stream that opens with VALIDATE is C regardless)
//   bit 1    the default Limits instead of tiny ones (tiny ones make every limit reachable)
//   bits 2-3 number of connections - 1: request i goes to connection i % n, so waits, wakes,
//            watches and queues cross connections
//   bit 4    StateOptions::drop_stale_waits off
//   bit 5    StateOptions::compare_set_wakes off
//   bit 6    StoreState::reset() halfway through
//
// Besides the sanitizers, it checks properties a crash would not show:
//   - sniffing is stable: once a prefix decides, longer prefixes decide the same;
//   - every strict prefix of a complete request is NeedMore (the server may get any split), and
//     parsing never reads past what it reports as consumed;
//   - encode_request(parse(bytes)) gives back exactly the consumed bytes;
//   - one RequestParser fed the stream in pieces (sizes drawn from the bytes) gives the same
//     requests and the same error as parsing each request whole, and examines each byte once;
//   - the state never sends to a connection it closed or that is gone, keeps total_bytes within
//     its limit, and holds no waits once every connection has gone;
//   - no request other than LIST_KEYS is answered with much more than a request's worth of bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "store/codec.hpp"
#include "store/protocol.hpp"
#include "store/state.hpp"

using namespace ddp::store;

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_codec: property violated: %s\n", what);
  std::abort();
}

#define FUZZ_CHECK(cond, what) \
  do {                         \
    if (!(cond)) fail(what);   \
  } while (0)

// Mirrors StoreServer's Outbox: close() disconnects the connection from the state at once (the
// server does the same, re-entering StoreState from inside a handler), later sends are refused.
class CheckingOutbox : public Outbox {
 public:
  explicit CheckingOutbox(StoreState& state) : state_(state) {}

  void send(ConnId conn, std::string_view bytes) override {
    FUZZ_CHECK(open_.count(conn) == 1, "state sent bytes to a closed or unknown connection");
    // (Empty sends happen: MULTI_GET of no keys is answered with no values.)
    if (conn == requester) sent_to_requester += bytes.size();
  }
  void close(ConnId conn, std::string_view reason) override {
    FUZZ_CHECK(open_.count(conn) == 1, "state closed a closed or unknown connection");
    FUZZ_CHECK(!reason.empty(), "close without a reason");
    open_.erase(conn);
    state_.disconnect(conn);
  }

  void open(ConnId conn, Dialect d) {
    open_.insert(conn);
    state_.connect(conn, d);
  }
  bool is_open(ConnId conn) const { return open_.count(conn) == 1; }
  void disconnect_all() {
    for (ConnId c : open_) state_.disconnect(c);
    open_.clear();
  }

  ConnId requester = 0;               // the connection whose request is being handled
  std::size_t sent_to_requester = 0;  // what that request made the state send back to it

 private:
  StoreState& state_;
  std::set<ConnId> open_;
};

Limits tiny_limits() {
  Limits l;
  l.max_key_bytes = 64;
  l.max_value_bytes = 256;
  l.max_keys_per_request = 64;
  l.max_request_bytes = 400;  // below a 256-byte COMPARE_SET, above a 256-byte SET
  l.max_total_bytes = 2048;
  l.max_connections = 4;
  return l;
}

void check_sniff(std::string_view stream, Dialect legacy, Sniff full) {
  for (std::size_t k = 1; k <= 5 && k <= stream.size(); ++k) {
    Sniff s = sniff_dialect(stream.substr(0, k), legacy);
    if (s.decided) {
      FUZZ_CHECK(full.decided && s.dialect == full.dialect, "sniffing changed its mind on more bytes");
      return;
    }
  }
}

// Every strict prefix of a complete request must ask for more. Checking all of them would make
// each input quadratic, so: the first 16 (opcode and first length field), 8 spread over the rest,
// and the last one.
void check_prefixes(std::string_view buf, std::size_t consumed, Dialect d, const Limits& limits) {
  Request scratch;
  auto check_at = [&](std::size_t k) {
    ParseResult p = parse_request(buf.substr(0, k), d, limits, scratch);
    FUZZ_CHECK(p.status == ParseStatus::NeedMore, "a strict prefix of a complete request is not NeedMore");
  };
  const std::size_t step = consumed <= 24 ? 1 : consumed / 8;
  for (std::size_t k = 0; k < consumed; k += (k < 16 ? 1 : step)) check_at(k);
  check_at(consumed - 1);
  // Bytes after the request never change how it parses.
  ParseResult exact = parse_request(buf.substr(0, consumed), d, limits, scratch);
  FUZZ_CHECK(exact.status == ParseStatus::Complete && exact.consumed == consumed,
             "a request parses differently without the bytes that follow it");
}

struct Incremental {
  std::vector<std::string> requests;  // each re-encoded
  bool error = false;
  std::uint64_t examined = 0;
};

Incremental feed_in_pieces(std::string_view stream, Dialect d, const Limits& limits) {
  Incremental got;
  RequestParser parser(d, limits);
  Request req;
  std::size_t i = 0;
  while (i < stream.size() && !got.error) {
    const std::size_t n = std::min(stream.size() - i, 1 + (static_cast<std::uint8_t>(stream[i]) * 7 + i) % 97);
    const std::string_view chunk = stream.substr(i, n);
    std::size_t off = 0;
    while (off < chunk.size()) {
      ParseResult r = parser.feed(chunk.substr(off), req);
      if (r.status == ParseStatus::Error) {
        got.error = true;
        break;
      }
      if (r.status == ParseStatus::NeedMore) break;
      FUZZ_CHECK(r.consumed >= 1 && r.consumed <= chunk.size() - off, "incremental consumed is outside the piece");
      off += r.consumed;
      got.requests.emplace_back();
      encode_request(d, req, got.requests.back());
    }
    i += n;
  }
  got.examined = parser.bytes_examined();
  return got;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::uint8_t header = data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);

  const Dialect legacy = (header & 1) ? Dialect::B : Dialect::A;
  const Limits limits = (header & 2) ? Limits{} : tiny_limits();
  const std::size_t nconns = 1 + ((header >> 2) & 3);
  StateOptions options;
  options.drop_stale_waits = (header & 16) == 0;
  options.compare_set_wakes = (header & 32) == 0;
  const bool reset_halfway = (header & 64) != 0;

  Sniff sniff = sniff_dialect(stream, legacy);
  check_sniff(stream, legacy, sniff);
  if (!sniff.decided) return 0;  // fewer than 5 bytes of a VALIDATE prefix
  const Dialect dialect = sniff.dialect;
  std::size_t pos = dialect == Dialect::C ? 5 : 0;

  StoreState state(limits, options);
  CheckingOutbox out(state);
  std::vector<ConnId> conns(nconns);
  ConnId next_id = 0;
  for (auto& c : conns) {
    c = ++next_id;
    out.open(c, dialect);
  }

  Request req;
  std::string reencoded;
  std::size_t handled = 0;
  const std::size_t reset_at = stream.size() / 2;
  bool did_reset = false;
  const Incremental pieces = feed_in_pieces(stream.substr(pos), dialect, limits);
  FUZZ_CHECK(pieces.examined <= stream.size() - pos, "the incremental parser examined bytes more than once");
  std::vector<std::string> whole;
  bool whole_error = false;
  while (pos < stream.size()) {
    std::string_view buf = stream.substr(pos);
    ParseResult r = parse_request(buf, dialect, limits, req);
    if (r.status == ParseStatus::NeedMore) break;
    if (r.status == ParseStatus::Error) {
      FUZZ_CHECK(!r.error.empty(), "a parse error without a message");
      whole_error = true;
      // The server closes the connection; this stream is over.
      break;
    }
    FUZZ_CHECK(r.consumed >= 1 && r.consumed <= buf.size(), "consumed is outside the buffer");
    check_prefixes(buf, r.consumed, dialect, limits);

    reencoded.clear();
    encode_request(dialect, req, reencoded);
    FUZZ_CHECK(reencoded == buf.substr(0, r.consumed), "encode(parse(bytes)) differs from the bytes");
    whole.push_back(reencoded);

    // A closed connection is replaced by a fresh one, so later requests still reach the state.
    ConnId& conn = conns[handled % nconns];
    if (!out.is_open(conn)) {
      conn = ++next_id;
      out.open(conn, dialect);
    }
    out.requester = conn;
    out.sent_to_requester = 0;
    const Op op = req.op;
    state.handle(conn, req, out);
    ++handled;
    // Bounded answers: a client must not make the server build more than it sent, give or take a
    // value. MULTI_GET (keys may repeat) is held to the request limit; others answer at most a
    // value or one watch notification (old and new value) plus a few wake-up bytes; only
    // LIST_KEYS answers with the whole store, which max_total_bytes bounds.
    if (op == Op::MultiGet) {
      FUZZ_CHECK(out.sent_to_requester <= limits.max_request_bytes, "a MULTI_GET answer passed the request limit");
    } else if (op != Op::ListKeys) {
      FUZZ_CHECK(out.sent_to_requester <= 2 * limits.max_value_bytes + limits.max_key_bytes + 64,
                 "one request made the state send back more than a value's worth");
    }
    FUZZ_CHECK(state.total_bytes() <= limits.max_total_bytes, "the store holds more than max_total_bytes");
    FUZZ_CHECK(state.waiting_connections() <= state.connections(), "more waiting connections than connections");

    pos += r.consumed;
    if (reset_halfway && !did_reset && pos >= reset_at) {
      did_reset = true;
      state.reset();
      FUZZ_CHECK(state.num_keys() == 0 && state.total_bytes() == 0 && state.waiting_connections() == 0,
                 "reset left state behind");
    }
  }

  FUZZ_CHECK(pieces.requests == whole, "fed in pieces, the parser gives other requests than parsing them whole");
  FUZZ_CHECK(pieces.error == whole_error, "fed in pieces, the parser fails where parsing whole does not (or not)");

  out.disconnect_all();
  FUZZ_CHECK(state.connections() == 0, "connections left after every client disconnected");
  FUZZ_CHECK(state.waiting_connections() == 0, "waits left after every client disconnected");
  return 0;
}
