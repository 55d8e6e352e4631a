#pragma once
// Which failed rank is the root cause of an attempt's failure, by evidence rather than by rank.
// Ranks that die together (one reap pass, or moments apart) are ordered by:
//   1. role: Original (its own error, or a signal the supervisor did not send) before LostPeer (its
//      error says a peer went away: gloo "Connection closed by peer", ECONNRESET/EPIPE, torch's
//      "Socket Timeout"…, or the error file's "peer_failure" mark) before Teardown (it died of our
//      own teardown, with no record of failing before it);
//   2. time: when it failed — the mtime of its error file when it wrote one (written before it
//      exits) or when the torch elastic timer signalled it, else when it was reaped; the earliest first;
//   3. the order they were reaped in (rank order within one pass).
// A rank reaped after the teardown began is a Teardown consequence unless its error file was
// written before the teardown began (plus kTogetherWindow), or it died of a signal we did not send
// within that window: those arrived together with the first failure and compete for root cause.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/supervisor/supervisor_machine.hpp"

namespace ddp::launcher {

// Exits this close to the one that began the teardown arrived together with it. It covers the
// time between a rank's exit and its reap on a loaded machine (SIGCHLD → event loop → waitpid,
// tens of ms on 2 busy cores) and the coarse clock of file mtimes (one jiffy, ≤ 10 ms); a worker
// killed by our SIGTERM is recognised by the signal, not by this window.
inline constexpr std::chrono::milliseconds kTogetherWindow{100};

// torchrun's @record error file (TORCHELASTIC_ERROR_FILE), as far as the summary needs it.
struct ErrorFileRecord {
  std::string message;               // "<Type>: <what>", plus the traceback when it has one
  std::optional<bool> peer_failure;  // message.extraInfo.peer_failure, when the writer set it
};
// From the file's text: {"message": {"message": …, "extraInfo": {…}}} or the older
// {"message": "…", "timestamp": …}. Throws nlohmann::json::exception on anything else.
ErrorFileRecord parse_error_file(std::string_view text);
// Never throws: a file that is not such JSON (a raw NUL or control byte, bytes that are not UTF-8,
// a truncated write) is quoted whole (up to 64 KiB) after what is wrong with it, so nothing the
// rank wrote is cut off at the bad byte (the JSON parser's own message stops there).
ErrorFileRecord error_file_record(std::string_view text, std::string_view path);

// What a failed rank's own records say, read by the shell when it writes the summary.
struct FailureRecord {
  std::optional<double> recorded_at;  // mtime of its error file (seconds since the epoch), if it wrote one
  bool lost_peer = false;             // its error (file, else last stderr lines) says a peer went away
  // When the torch elastic timer signalled it (launcher/hang/file_timer.hpp): its own `expires()` deadline
  // passed, which dates its failure like an error file and makes it an original failure, not a lost
  // peer (unless the timer fired only after the teardown had begun: then the deadline was missed
  // because the group was being stopped).
  std::optional<double> timer_killed_at;
};
// The error file decides when there is one (its peer_failure mark, else its message); otherwise
// the last stderr lines (a Python traceback without @record ends with the exception).
bool record_says_lost_peer(const std::optional<ErrorFileRecord>& error_file,
                           const std::vector<std::string>& stderr_tail);

enum class FailureRole { Original, LostPeer, Teardown };
std::string_view failure_role_name(FailureRole role);

struct AttributedFailure {
  RankExit exit;
  FailureRole role = FailureRole::Original;
  double failed_at = 0;      // seconds since the epoch
  std::size_t observed = 0;  // its index in the failures (and records) given
};

// failures: the machine's, in reap order; records: one per failure, same order. Returns them
// root cause first (see the top of this file).
std::vector<AttributedFailure> attribute_failures(const std::vector<RankFailure>& failures,
                                                  const std::vector<FailureRecord>& records,
                                                  std::optional<double> teardown_began,
                                                  std::chrono::milliseconds window = kTogetherWindow);

}  // namespace ddp::launcher
