#pragma once
// OutputLines: a worker stream's bytes cut into lines for the console, the metrics and the failure
// summary. Only the display is cut: the per-rank log files get the bytes as read (Supervisor), so a
// line longer than `max_line` is shown in pieces but stored whole, with no newline added. Bytes
// pass through untouched (NUL and invalid UTF-8 included).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::launcher {

class OutputLines {
 public:
  explicit OutputLines(std::size_t max_line = 64 * 1024) : max_line_(max_line) {}

  // The lines `data` completes (without their '\n'), and max_line pieces of a longer one.
  std::vector<std::string> feed(std::string_view data);
  // End of stream: the last line when it had no newline.
  std::optional<std::string> finish();

 private:
  std::size_t max_line_;
  std::string partial_;
};

// How per-rank files follow torchrun's -r/--redirects and -t/--tee masks (bit 1 stdout, 2 stderr):
// a stream has a file when it is redirected or teed (torch 1.13 tees by redirecting and tailing the
// file), and is on the console unless it is redirected without tee (or its rank is filtered out).
struct StreamRouting {
  bool file = false;
  bool console = true;
};
StreamRouting route_stream(int redirect_mask, int tee_mask, int stream_bit, bool rank_shown);

// Both streams of local rank `local_rank`, from the per-rank masks and --local-ranks-filter's
// console_ranks (a missing entry: mask 0, rank shown).
struct RankRouting {
  StreamRouting out;
  StreamRouting err;
};
RankRouting route_rank(const std::vector<int>& redirects, const std::vector<int>& tee,
                       const std::vector<bool>& console_ranks, int local_rank);

}  // namespace ddp::launcher
