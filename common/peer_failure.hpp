#pragma once
// A rank that fails only because a peer went away (its connection closed or reset, a collective or
// store read timed out waiting for it) is the consequence of that peer's failure, not a root cause.
// The worker SDK marks its error file with this verdict and the supervisor reads it back (and
// applies the same test to error files and stderr that carry no mark), so both sides agree.
#include <string_view>

namespace ddp {

// The error file's mark, in torchrun's layout: {"message": {"message": …, "extraInfo":
// {"timestamp": …, "peer_failure": true}}}. torch reads only message.message and
// extraInfo.timestamp/py_callstack, so the extra key is carried along untouched (torchrun copies
// the whole file into its own error file).
inline constexpr std::string_view kPeerFailureField = "peer_failure";

// True when an error text says the peer side went away: gloo's "Connection closed by peer" and
// "Connection reset by peer" (ECONNRESET), "Broken pipe" (EPIPE), torch's store "Socket Timeout"
// and "Connection was likely closed", NCCL's "remote process exited". Case-insensitive.
bool mentions_lost_peer(std::string_view text);

}  // namespace ddp
