#include "launcher/outputs/output_lines.hpp"

#include <utility>

namespace ddp::launcher {

std::vector<std::string> OutputLines::feed(std::string_view data) {
  if (max_line_ == 0) max_line_ = 1;
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t nl; (nl = data.find('\n', start)) != std::string_view::npos; start = nl + 1) {
    partial_.append(data.substr(start, nl - start));
    while (partial_.size() > max_line_) {
      lines.push_back(partial_.substr(0, max_line_));
      partial_.erase(0, max_line_);
    }
    lines.push_back(std::exchange(partial_, {}));
  }
  partial_.append(data.substr(start));
  // A piece leaves only when more bytes follow it: a line of N bytes shows as ceil(N / max_line)
  // pieces however the reads cut it.
  while (partial_.size() > max_line_) {
    lines.push_back(partial_.substr(0, max_line_));
    partial_.erase(0, max_line_);
  }
  return lines;
}

std::optional<std::string> OutputLines::finish() {
  if (partial_.empty()) return std::nullopt;
  return std::exchange(partial_, {});
}

StreamRouting route_stream(int redirect_mask, int tee_mask, int stream_bit, bool rank_shown) {
  StreamRouting r;
  const bool redirected = (redirect_mask & stream_bit) != 0;
  const bool teed = (tee_mask & stream_bit) != 0;
  r.file = redirected || teed;
  r.console = rank_shown && (!redirected || teed);
  return r;
}

RankRouting route_rank(const std::vector<int>& redirects, const std::vector<int>& tee,
                       const std::vector<bool>& console_ranks, int local_rank) {
  auto local = static_cast<std::size_t>(local_rank);
  auto mask_of = [&](const std::vector<int>& masks) { return local < masks.size() ? masks[local] : 0; };
  const bool shown = local >= console_ranks.size() || console_ranks[local];
  return {route_stream(mask_of(redirects), mask_of(tee), 1, shown),
          route_stream(mask_of(redirects), mask_of(tee), 2, shown)};
}

}  // namespace ddp::launcher
