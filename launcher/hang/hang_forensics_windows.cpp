// launcher/hang/hang_forensics.hpp in the Windows build: no stacks are taken. Its two routes are POSIX
// ones — gdb attaching to a native rank, SIGABRT making a Python rank's faulthandler dump — and
// Windows has neither signal. A hang is still detected and the group stopped; the summary says
// every rank gave no stack, and why.
#include <boost/asio/post.hpp>

#include "launcher/hang/hang_forensics.hpp"

namespace ddp::launcher {

std::optional<std::filesystem::path> find_on_path(std::string_view, std::string_view) { return std::nullopt; }

HangForensicsOptions default_hang_forensics_options() { return HangForensicsOptions{}; }

bool runs_python(pid_t) { return false; }

HangForensics::HangForensics(boost::asio::io_context& io, HangForensicsOptions options)
    : io_(io), options_(std::move(options)) {}

HangForensics::~HangForensics() = default;

bool HangForensics::busy() const { return false; }

void HangForensics::collect(std::vector<StackTarget> targets, std::filesystem::path,
                            std::function<void(HangForensicsResult)> done) {
  HangForensicsResult result;
  for (const auto& t : targets) {
    result.ranks.push_back(RankStacks{t.rank,
                                      t.local_rank,
                                      t.pid,
                                      StackSource::Faulthandler,
                                      {},
                                      "",
                                      "stacks are not taken in the Windows build (no gdb, no SIGABRT)"});
  }
  result.summary = summarize_stacks(result.ranks, nullptr);
  boost::asio::post(io_, [done = std::move(done), result = std::move(result)]() mutable { done(std::move(result)); });
}

}  // namespace ddp::launcher
