#include "jobs/dashboard/live_frames.hpp"

#include <fmt/format.h>

#include <set>
#include <string>

#include "jobs/api_request.hpp"

namespace ddp::jobs::dashboard {

using json = nlohmann::json;

LiveView parse_live_view(const std::map<std::string, std::string>& query) {
  auto get = [&](const char* key, const char* def) {
    auto it = query.find(key);
    return it == query.end() || it->second.empty() ? std::string(def) : it->second;
  };
  LiveView v;
  auto view = get("view", "jobs");
  if (view == "jobs") {
    v.kind = LiveView::Kind::Jobs;
    if (auto s = get("state", ""); !s.empty()) v.state = parse_state_param(s);
  } else if (view == "host") {
    v.kind = LiveView::Kind::Host;
  } else if (view == "job") {
    v.kind = LiveView::Kind::Job;
    v.job = parse_id(get("job", ""));
    v.rank = get("rank", "0");
    v.stream = get("stream", "stdout");
    check_log_source(v.rank, v.stream);
  } else {
    throw ApiError(400, fmt::format("view '{}' is not jobs, host or job", view));
  }
  return v;
}

namespace {

// The steps of rank `rank`'s series `name` (GET /v1/jobs/{id}/metrics' "steps"), when there is one
// for every value and they only go up (uPlot's x must); else nullptr.
const json* increasing_steps(const json& job_metrics, const std::string& rank, const std::string& name, std::size_t n) {
  if (!job_metrics.contains("steps")) return nullptr;
  const auto& all = job_metrics["steps"];
  if (!all.is_object() || !all.contains(rank) || !all[rank].is_object() || !all[rank].contains(name)) return nullptr;
  const auto& steps = all[rank][name];
  if (!steps.is_array() || steps.size() != n) return nullptr;
  for (std::size_t i = 0; i < n; ++i) {
    if (!steps[i].is_number()) return nullptr;
    if (i > 0 && !(steps[i].get<double>() > steps[i - 1].get<double>())) return nullptr;
  }
  return &steps;
}

}  // namespace

nlohmann::json metrics_frame(const json& job_metrics, std::size_t max_points) {
  if (max_points < 2) max_points = 2;
  std::set<std::string> names;
  json ranks = json::object();
  // x is the step when every series has its steps, increasing; else every series' x is the value's
  // position (a step that goes back, e.g. per-epoch batch indices, would fold the chart).
  bool by_step = true;
  if (job_metrics.contains("ranks") && job_metrics["ranks"].is_object()) {
    for (const auto& [rank, series] : job_metrics["ranks"].items()) {
      for (const auto& [name, values] : series.items()) {
        if (values.is_array() && !increasing_steps(job_metrics, rank, name, values.size())) by_step = false;
      }
    }
    for (const auto& [rank, series] : job_metrics["ranks"].items()) {
      json out = json::object();
      for (const auto& [name, values] : series.items()) {
        if (!values.is_array()) continue;
        // A job file's `step` pattern is the x axis, not a curve of its own (unless it is all there is).
        if (name != "step" || series.size() == 1) names.insert(name);
        const json* steps = by_step ? increasing_steps(job_metrics, rank, name, values.size()) : nullptr;
        const std::size_t n = values.size();
        json xs = json::array(), ys = json::array();
        const std::size_t keep = std::min(n, max_points);
        for (std::size_t i = 0; i < keep; ++i) {
          // Evenly over [0, n-1]: i = 0 is the first value, i = keep-1 the last.
          std::size_t at = keep == n ? i : (i * (n - 1)) / (keep - 1);
          xs.push_back(steps ? (*steps)[at] : json(at + 1));
          ys.push_back(values[at]);
        }
        out[name] = {{"x", xs}, {"y", ys}, {"count", n}};
      }
      ranks[rank] = out;
    }
  }
  return {{"names", json(names)}, {"x", by_step ? "step" : "index"}, {"ranks", ranks}};
}

std::size_t utf8_complete_prefix(std::string_view bytes) {
  const std::size_t n = bytes.size();
  // Look back at most 3 bytes for the lead byte of the last sequence.
  for (std::size_t back = 1; back <= 3 && back <= n; ++back) {
    auto c = static_cast<unsigned char>(bytes[n - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: keep looking for the lead
    std::size_t len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return len > back ? n - back : n;  // the sequence needs more bytes than arrived: hold it back
  }
  return n;
}

namespace {

// Where the escape sequence that starts at bytes[at] (an ESC) ends: one past its last byte, npos
// when it is not finished yet.
std::size_t escape_end(std::string_view b, std::size_t at) {
  const std::size_t n = b.size();
  if (at + 1 >= n) return std::string_view::npos;
  const char kind = b[at + 1];
  if (kind == '[') {  // CSI: parameter and intermediate bytes, then one final byte
    std::size_t j = at + 2;
    while (j < n && b[j] >= 0x20 && b[j] <= 0x3f) ++j;
    if (j == n) return std::string_view::npos;
    return b[j] >= 0x40 && b[j] <= 0x7e ? j + 1 : j;  // a malformed one ends before the stray byte
  }
  if (kind == ']' || kind == 'P' || kind == 'X' || kind == '^' || kind == '_') {  // OSC, DCS…: to BEL or ST
    for (std::size_t j = at + 2; j < n; ++j) {
      if (b[j] == '\a') return j + 1;
      if (b[j] == '\x1b') return j + 1 < n ? (b[j + 1] == '\\' ? j + 2 : j) : std::string_view::npos;
    }
    return std::string_view::npos;
  }
  if (kind == '(' || kind == ')' || kind == '*' || kind == '+' || kind == '#' || kind == '%') {  // ESC ( B …
    return at + 2 < n ? at + 3 : std::string_view::npos;
  }
  return at + 2;
}

}  // namespace

TerminalText terminal_text(std::string_view b) {
  TerminalText out;
  out.text.reserve(b.size());
  const std::size_t n = b.size();
  std::size_t i = 0;
  while (i < n) {
    const auto c = static_cast<unsigned char>(b[i]);
    if (c == 0x1b) {
      auto end = escape_end(b, i);
      if (end == std::string_view::npos) {
        if (n - i <= kMaxControlSequence) break;  // unfinished: the next chunk has the rest
        end = i + 1;                              // not a sequence after all: drop the ESC alone
      }
      i = end;
    } else if (c == '\r') {
      if (i + 1 == n) break;  // a CRLF split between chunks must stay one break
      if (b[i + 1] != '\n') out.text += '\n';
      ++i;
    } else if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      ++i;
    } else {
      out.text += b[i++];
    }
  }
  out.consumed = i;
  return out;
}

}  // namespace ddp::jobs::dashboard
