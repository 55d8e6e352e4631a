#include "launcher/supervisor/root_cause.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "common/peer_failure.hpp"

namespace ddp::launcher {

using json = nlohmann::json;

ErrorFileRecord parse_error_file(std::string_view text) {
  auto j = json::parse(text);
  const auto& m = j.at("message");
  ErrorFileRecord r;
  if (m.is_string()) {
    r.message = m.get<std::string>();
    return r;
  }
  r.message = m.at("message").get<std::string>();
  if (auto extra = m.find("extraInfo"); extra != m.end() && extra->is_object()) {
    if (auto cs = extra->find("py_callstack"); cs != extra->end() && cs->is_string()) {
      r.message += "\n" + cs->get<std::string>();
    }
    if (auto pf = extra->find(kPeerFailureField); pf != extra->end() && pf->is_boolean()) {
      r.peer_failure = pf->get<bool>();
    }
  }
  return r;
}

ErrorFileRecord error_file_record(std::string_view text, std::string_view path) {
  try {
    return parse_error_file(text);
  } catch (const std::exception& e) {
    constexpr std::size_t kMax = 64 * 1024;
    std::string why = e.what();
    // The parser quotes the text up to the bad byte: the whole text follows instead.
    if (auto cut = why.find("; last read:"); cut != std::string::npos) why.erase(cut);
    return ErrorFileRecord{fmt::format("(error file {} is not a torchelastic error record: {}) its text: {}{}", path,
                                       why, text.substr(0, kMax), text.size() > kMax ? " [...]" : ""),
                           std::nullopt};
  }
}

bool record_says_lost_peer(const std::optional<ErrorFileRecord>& error_file,
                           const std::vector<std::string>& stderr_tail) {
  if (error_file) return error_file->peer_failure.value_or(mentions_lost_peer(error_file->message));
  // The last few lines: the final exception of a traceback, gloo's "terminate called … what(): …".
  constexpr std::size_t kTail = 5;
  auto from = stderr_tail.size() > kTail ? stderr_tail.end() - kTail : stderr_tail.begin();
  return std::any_of(from, stderr_tail.end(), [](const std::string& l) { return mentions_lost_peer(l); });
}

std::string_view failure_role_name(FailureRole role) {
  switch (role) {
    case FailureRole::Original: return "original failure";
    case FailureRole::LostPeer: return "lost a peer";
    case FailureRole::Teardown: return "stopped by the teardown";
  }
  return "?";
}

std::vector<AttributedFailure> attribute_failures(const std::vector<RankFailure>& failures,
                                                  const std::vector<FailureRecord>& records,
                                                  std::optional<double> teardown_began,
                                                  std::chrono::milliseconds window) {
  const double window_s = std::chrono::duration<double>(window).count();
  auto late = [&](double t) { return teardown_began && t > *teardown_began + window_s; };
  std::vector<AttributedFailure> out;
  out.reserve(failures.size());
  for (std::size_t i = 0; i < failures.size(); ++i) {
    const auto& f = failures[i];
    FailureRecord rec = i < records.size() ? records[i] : FailureRecord{};
    AttributedFailure a{f.exit, FailureRole::Original, f.exit.time, i};
    // An error file is written before the exit, the timer's signal sent before it: when older than
    // the reap, they date the failure.
    std::optional<double> own = rec.recorded_at;
    if (rec.timer_killed_at) own = std::min(own.value_or(*rec.timer_killed_at), *rec.timer_killed_at);
    if (own) a.failed_at = std::min(a.failed_at, *own);
    bool consequence_of_teardown = false;
    if (f.after_teardown) {
      // Its own record from before the teardown proves it was failing already (it may still have
      // died of our SIGTERM while it shut down); without one, our signal or a late exit is ours.
      consequence_of_teardown = own ? late(*own) : f.by_teardown_signal || late(f.exit.time);
    }
    if (consequence_of_teardown) {
      a.role = FailureRole::Teardown;
    } else if (rec.lost_peer && !rec.timer_killed_at) {
      a.role = FailureRole::LostPeer;
    }
    out.push_back(a);
  }
  std::stable_sort(out.begin(), out.end(), [](const AttributedFailure& x, const AttributedFailure& y) {
    if (x.role != y.role) return x.role < y.role;
    if (x.role == FailureRole::Teardown) return false;  // consequences stay in reap order
    return x.failed_at < y.failed_at;
  });
  return out;
}

}  // namespace ddp::launcher
