#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "store/codec.hpp"

using namespace ddp::store;

namespace {

std::string hex(std::string_view h) {
  std::string out;
  std::string digits;
  for (char c : h) {
    if (c != ' ') digits += c;
  }
  for (std::size_t i = 0; i + 1 < digits.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16)));
  }
  return out;
}

Request parse_whole(std::string_view bytes, Dialect d, Limits limits = {}) {
  Request req;
  auto r = parse_request(bytes, d, limits, req);
  REQUIRE(r.status == ParseStatus::Complete);
  CHECK(r.consumed == bytes.size());
  return req;
}

}  // namespace

TEST_CASE("captured torch 1.13 requests parse (spec §8)") {
  auto set = parse_whole(hex("00 0500000000000000 2f6b657931 0600000000000000 76616c756531"), Dialect::A);
  CHECK(set.op == Op::Set);
  CHECK(set.keys[0] == "/key1");
  CHECK(set.values[0] == "value1");

  auto wait = parse_whole(hex("05 0100000000000000 0500000000000000 2f6b657931"), Dialect::A);
  CHECK(wait.op == Op::Wait);
  REQUIRE(wait.keys.size() == 1);
  CHECK(wait.keys[0] == "/key1");

  auto add = parse_whole(hex("03 0800000000000000 2f636f756e746572 feffffffffffffff"), Dialect::A);
  CHECK(add.op == Op::Add);
  CHECK(add.keys[0] == "/counter");
  CHECK(add.number == -2);

  auto del = parse_whole(hex("08 0500000000000000 2f6b657931"), Dialect::A);
  CHECK(del.op == Op::DeleteKey);
  CHECK(parse_whole(hex("06"), Dialect::A).op == Op::NumKeys);
  CHECK(parse_whole(hex("07 0200000000000000 2f77"), Dialect::A).op == Op::WatchKey);
}

TEST_CASE("captured torch 2.6 requests parse in dialect C") {
  auto ping = parse_whole(hex("0d 577f0000"), Dialect::C);
  CHECK(ping.op == Op::Ping);
  CHECK(ping.u32 == 0x7f57);
  auto add = parse_whole(hex("04 0500000000000000 696e69742f 0100000000000000"), Dialect::C);
  CHECK(add.op == Op::Add);
  CHECK(add.keys[0] == "init/");
  CHECK(add.number == 1);
  auto mset = parse_whole(hex("0b 0200000000000000 0300000000000000 2f6d31 0100000000000000 78 0300000000000000 "
                              "2f6d32 0200000000000000 7979"),
                          Dialect::C);
  CHECK(mset.op == Op::MultiSet);
  CHECK(mset.keys == std::vector<std::string>{"/m1", "/m2"});
  CHECK(mset.values == std::vector<std::string>{"x", "yy"});
  CHECK(parse_whole(hex("0c"), Dialect::C).op == Op::CancelWait);
  CHECK(parse_whole(hex("11"), Dialect::C).op == Op::ListKeys);
  auto barrier = parse_whole(hex("12 0500000000000000 2f62617231 0200000000000000"), Dialect::C);
  CHECK(barrier.op == Op::Barrier);
  CHECK(barrier.number == 2);
}

TEST_CASE("a request split at any byte boundary needs more until it is whole") {
  std::string bytes = hex("01 0300000000000000 2f6373 0000000000000000 0500000000000000 6669727374");
  for (std::size_t cut = 0; cut < bytes.size(); ++cut) {
    Request req;
    auto r = parse_request(std::string_view(bytes).substr(0, cut), Dialect::A, {}, req);
    CHECK(r.status == ParseStatus::NeedMore);
  }
  auto cas = parse_whole(bytes, Dialect::A);
  CHECK(cas.op == Op::CompareSet);
  CHECK(cas.values[0].empty());
  CHECK(cas.values[1] == "first");
}

TEST_CASE("pipelined requests: consumed covers exactly the first") {
  std::string bytes = hex("06") + hex("06");
  Request req;
  auto r = parse_request(bytes, Dialect::A, {}, req);
  REQUIRE(r.status == ParseStatus::Complete);
  CHECK(r.consumed == 1);
}

TEST_CASE("lengths are checked against limits before any bytes are awaited") {
  Limits small;
  small.max_key_bytes = 4;
  small.max_value_bytes = 8;
  small.max_keys_per_request = 2;
  Request req;
  // A key length of ~2^60 with no bytes behind it: an error, not NeedMore and not an allocation.
  auto huge = parse_request(hex("00 000000000000000f"), Dialect::A, small, req);
  CHECK(huge.status == ParseStatus::Error);
  CHECK(huge.error.find("key") != std::string::npos);
  CHECK(huge.error.find("limit of 4") != std::string::npos);

  auto value = parse_request(hex("00 0100000000000000 61 0900000000000000"), Dialect::A, small, req);
  CHECK(value.status == ParseStatus::Error);
  CHECK(value.error.find("value") != std::string::npos);

  auto many = parse_request(hex("05 0300000000000000"), Dialect::A, small, req);
  CHECK(many.status == ParseStatus::Error);
  CHECK(many.error.find("3 keys") != std::string::npos);

  Limits tiny_request;
  tiny_request.max_request_bytes = 16;
  auto big_request = parse_request(hex("00 0400000000000000 61616161 0800000000000000"), Dialect::A, tiny_request, req);
  CHECK(big_request.status == ParseStatus::Error);
}

TEST_CASE("unknown opcodes are errors per dialect") {
  Request req;
  CHECK(parse_request(hex("09"), Dialect::A, {}, req).status == ParseStatus::Error);
  CHECK(parse_request(hex("09 0100000000000000 0100000000000000 61"), Dialect::B, {}, req).status ==
        ParseStatus::Complete);
  CHECK(req.op == Op::MultiGet);  // 9 is MULTI_GET in B
  CHECK(req.keys == std::vector<std::string>{"a"});
  CHECK(parse_request(hex("13"), Dialect::C, {}, req).status == ParseStatus::Error);
  CHECK(parse_request(hex("ff"), Dialect::C, {}, req).status == ParseStatus::Error);
}

TEST_CASE("dialect sniffing on the first bytes (spec §6)") {
  CHECK(sniff_dialect(hex("00 cef7853c"), Dialect::A).decided);
  CHECK(sniff_dialect(hex("00 cef7853c"), Dialect::A).dialect == Dialect::C);
  CHECK_FALSE(sniff_dialect(hex("00 cef7"), Dialect::A).decided);
  CHECK_FALSE(sniff_dialect("", Dialect::A).decided);
  auto set113 = sniff_dialect(hex("00 0500000000000000"), Dialect::A);
  CHECK(set113.decided);
  CHECK(set113.dialect == Dialect::A);
  auto add_b = sniff_dialect(hex("03"), Dialect::B);
  CHECK(add_b.decided);
  CHECK(add_b.dialect == Dialect::B);
}

TEST_CASE("every operation round-trips through encode and parse in each dialect that has it") {
  for (Dialect d : {Dialect::A, Dialect::B, Dialect::C}) {
    for (int i = 0; i <= static_cast<int>(Op::Barrier); ++i) {
      Op op = static_cast<Op>(i);
      if (!encode_opcode(d, op)) continue;
      Request req;
      req.op = op;
      req.keys = {"/k1", "/key2"};
      req.values = {"v1", "value2"};
      req.number = -42;
      req.u32 = 0xdeadbeef;
      std::string bytes;
      encode_request(d, req, bytes);
      Request back;
      auto r = parse_request(bytes, d, {}, back);
      INFO("dialect ", static_cast<int>(d), " op ", op_name(op));
      REQUIRE(r.status == ParseStatus::Complete);
      CHECK(r.consumed == bytes.size());
      CHECK(back.op == op);
    }
  }
}

TEST_CASE("integers are little-endian") {
  std::string out;
  put_i64(out, 3);
  CHECK(out == hex("0300000000000000"));
  out.clear();
  put_u32(out, kValidateMagic);
  CHECK(out == hex("cef7853c"));
  CHECK(get_u32(out.data()) == kValidateMagic);
}

TEST_CASE("one parser fed a stream in pieces of any size gives the requests parsed whole") {
  // SET, CHECK of two keys, MULTI_SET of an empty value, NUM_KEYS (dialect B numbering: 0, 4, 10, 6).
  std::string stream = hex("00 0300000000000000 2f6b31 0200000000000000 7631") +
                       hex("04 0200000000000000 0100000000000000 61 0200000000000000 6262") +
                       hex("0a 0100000000000000 0200000000000000 2f6d 0000000000000000") + hex("06");
  for (std::size_t piece = 1; piece <= stream.size(); ++piece) {
    RequestParser parser(Dialect::B, {});
    std::vector<Request> got;
    for (std::size_t i = 0; i < stream.size(); i += piece) {
      std::string_view chunk = std::string_view(stream).substr(i, piece);
      while (!chunk.empty()) {
        Request req;
        auto r = parser.feed(chunk, req);
        REQUIRE(r.status != ParseStatus::Error);
        if (r.status == ParseStatus::NeedMore) break;
        got.push_back(std::move(req));
        chunk.remove_prefix(r.consumed);
      }
    }
    INFO("pieces of ", piece, " bytes");
    REQUIRE(got.size() == 4);
    CHECK(got[0].op == Op::Set);
    CHECK(got[0].values == std::vector<std::string>{"v1"});
    CHECK(got[1].op == Op::Check);
    CHECK(got[1].keys == std::vector<std::string>{"a", "bb"});
    CHECK(got[2].op == Op::MultiSet);
    CHECK(got[2].keys == std::vector<std::string>{"/m"});
    CHECK(got[2].values == std::vector<std::string>{""});
    CHECK(got[3].op == Op::NumKeys);
    CHECK(parser.pending_bytes() == 0);
    CHECK(parser.bytes_examined() == stream.size());
  }
}

TEST_CASE("a 50 MB request read 64 KiB at a time: each byte examined once, held bytes counted") {
  // Issue 25 item 3.10: the server re-parsed a request from its first byte on every read.
  Request big;
  big.op = Op::Wait;
  for (int i = 0; i < 50 * 1000 * 1000 / 4104; ++i) big.keys.push_back(std::string(4096, 'k') + std::to_string(i));
  std::string bytes;
  encode_request(Dialect::A, big, bytes);
  RequestParser parser(Dialect::A, {});
  Request out;
  std::size_t pos = 0;
  ParseResult r;
  std::size_t reads = 0;
  while (pos < bytes.size()) {
    auto chunk = std::string_view(bytes).substr(pos, 64u << 10);
    r = parser.feed(chunk, out);
    ++reads;
    pos += chunk.size();
    if (r.status != ParseStatus::NeedMore) break;
    CHECK(parser.pending_bytes() == pos);
  }
  REQUIRE(r.status == ParseStatus::Complete);
  CHECK(pos == bytes.size());
  CHECK(reads > 700);
  CHECK(parser.bytes_examined() == bytes.size());
  CHECK(parser.pending_bytes() == 0);
  CHECK(out.keys == big.keys);
}

TEST_CASE("a failed parser stays failed and says why") {
  Limits small;
  small.max_key_bytes = 4;
  RequestParser parser(Dialect::A, small);
  Request req;
  auto r = parser.feed(hex("00 0500"), req);
  CHECK(r.status == ParseStatus::NeedMore);
  r = parser.feed(hex("000000000000"), req);
  REQUIRE(r.status == ParseStatus::Error);
  CHECK(r.error == "SET: key of 5 bytes exceeds the limit of 4 bytes");
  CHECK(parser.failed());
  CHECK(parser.feed(hex("06"), req).status == ParseStatus::Error);
}
