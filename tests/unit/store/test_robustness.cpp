// Regression cases from the robustness work (tests/fuzz, tests/integration/robustness): inputs
// that once made the store core misbehave, each with the reason it matters.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "store/codec.hpp"
#include "store/state.hpp"
#include "unit/store/recording_outbox.hpp"

using namespace ddp::store;

namespace {

using Recorder = testing::RecordingOutbox;

Request request(Op op, std::vector<std::string> keys, std::vector<std::string> values = {}) {
  Request r;
  r.op = op;
  r.keys = std::move(keys);
  r.values = std::move(values);
  return r;
}

}  // namespace

TEST_CASE("MULTI_GET naming one big key many times is refused, not answered with a giant reply") {
  // 131072 copies of one 8 MiB key would have been a 1 TiB reply built in memory.
  Limits limits;
  limits.max_request_bytes = 1u << 20;
  StoreState state(limits);
  Recorder out;
  state.connect(1, Dialect::C);
  state.connect(2, Dialect::C);
  auto set = request(Op::Set, {"/big"}, {std::string(64u << 10, 'b')});
  state.handle(1, set, out);

  auto fits = request(Op::MultiGet, std::vector<std::string>(15, "/big"));  // 15 x 64 KiB < 1 MiB
  state.handle(1, fits, out);
  CHECK(out.closed.count(1) == 0);
  CHECK(out.sent[1].size() == 15 * (8 + (64u << 10)));

  auto amplified = request(Op::MultiGet, std::vector<std::string>(17, "/big"));  // 17 x 64 KiB > 1 MiB
  state.handle(2, amplified, out);
  REQUIRE(out.closed.count(2) == 1);
  CHECK(out.closed[2].find("MULTI_GET reply of") != std::string::npos);
  CHECK(out.closed[2].find("limit of 1048576 bytes") != std::string::npos);
  CHECK(out.sent[2].empty());
}

TEST_CASE("MULTI_GET of no keys is answered with nothing, and the connection stays usable") {
  StoreState state;
  Recorder out;
  state.connect(1, Dialect::C);
  auto none = request(Op::MultiGet, {});
  state.handle(1, none, out);
  CHECK(out.closed.empty());
  CHECK(out.sent[1].empty());
  Request ping;
  ping.op = Op::Ping;
  ping.u32 = 7;
  state.handle(1, ping, out);
  CHECK(out.sent[1] == std::string("\x07\x00\x00\x00", 4));
}
