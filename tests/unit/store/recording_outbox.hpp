#pragma once
// An Outbox that records what StoreState sends and closes, per connection: the unit tests' stand-in
// for the server's sockets.
#include <map>
#include <string>
#include <string_view>

#include "store/state.hpp"

namespace ddp::store::testing {

struct RecordingOutbox : Outbox {
  std::map<ConnId, std::string> sent;
  std::map<ConnId, std::string> closed;
  void send(ConnId conn, std::string_view bytes) override { sent[conn].append(bytes); }
  void close(ConnId conn, std::string_view reason) override { closed[conn] = std::string(reason); }
  // What `conn` was sent since the last take.
  std::string take(ConnId conn) {
    auto s = sent[conn];
    sent[conn].clear();
    return s;
  }
};

}  // namespace ddp::store::testing
