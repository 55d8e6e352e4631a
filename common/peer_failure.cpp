#include "common/peer_failure.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace ddp {

namespace {

bool contains_nocase(std::string_view text, std::string_view needle) {
  auto lower = [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); };
  auto it = std::search(text.begin(), text.end(), needle.begin(), needle.end(),
                        [&](char a, char b) { return lower(a) == lower(b); });
  return it != text.end();
}

}  // namespace

bool mentions_lost_peer(std::string_view text) {
  // Each phrase is what a rank sees when the OTHER end failed; none is a rank's own mistake.
  static constexpr std::array<std::string_view, 8> kPhrases = {
      "closed by peer",                // gloo tcp pair: the peer's socket closed (it exited)
      "reset by peer",                 // ECONNRESET: the peer died with unread data
      "ECONNRESET",                    //
      "broken pipe",                   // EPIPE: writing to a peer that is gone
      "EPIPE",                         //
      "Socket Timeout",                // torch 1.13 TCPStore: a key another rank should have set
      "Connection was likely closed",  // torch >= 2.2 store client: the store's host went away
      "remote process exited",         // NCCL: a peer rank died (or the network failed)
  };
  return std::any_of(kPhrases.begin(), kPhrases.end(), [&](std::string_view p) { return contains_nocase(text, p); });
}

}  // namespace ddp
