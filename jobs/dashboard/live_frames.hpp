#pragma once
// What the live stream's messages hold, pure: the chart's points from the job's metrics view, and
// the cut of a log chunk that does not split a UTF-8 character.
#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "jobs/job_state.hpp"
#include "jobs/scheduler.hpp"

namespace ddp::jobs::dashboard {

// What a live stream (GET /ui/events?…) follows: a page's topics.
//   view=jobs[&state=S]                              the job list (newest first) and the host
//   view=host                                        the host: slots, GPUs, queue
//   view=job&job=ID[&rank=N|supervisor][&stream=stdout|stderr]   one job, its timeline, log and chart
struct LiveView {
  enum class Kind { Jobs, Host, Job };
  Kind kind = Kind::Jobs;
  std::optional<JobState> state;
  JobId job = 0;
  std::string rank = "0", stream = "stdout";
};
// The query's view; ApiError 400 naming the parameter that is wrong.
LiveView parse_live_view(const std::map<std::string, std::string>& query);

// From GET /v1/jobs/{id}/metrics' JSON ({"ranks": {"0": {"loss": [2.3, 1.9, …]}}, "steps": {"0":
// {"loss": [10, 20, …]}}, …}): every rank's series as points, x the value's step (as `ddp-launch
// report` charts metrics.csv) and y the value: {"names": [...], "x": "step", "ranks": {"0": {"loss":
// {"x": […], "y": […], "count": N}}}}. When a series has no steps or they do not only go up (a step
// that restarts each epoch), x is every value's position instead (1, 2, …) and "x" says "index".
// A `step` series is the x axis, not a name of its own (unless it is the only one).
// A series longer than max_points (≥ 2) is thinned evenly to max_points, its first and last points
// kept: a week-long job's chart costs the browser what a short one's does.
nlohmann::json metrics_frame(const nlohmann::json& job_metrics, std::size_t max_points);

// The length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence: the rest
// (at most 3 bytes) waits for the next chunk. Bytes that are not UTF-8 at all are not held back.
std::size_t utf8_complete_prefix(std::string_view bytes);

// What the page shows of a rank's output, as a terminal would show its text: the control sequences
// of colours, cursor moves and window titles (ESC [ … final byte, ESC ] … BEL or ESC \, ESC and one
// byte) and the other control bytes except tab and newline (NUL among them) are dropped, and a
// carriage return not followed by a newline starts a new line (a progress bar's updates, one a
// line; else a browser shows them as one endless line). `consumed` is how much of `bytes` the text
// covers: the rest is an unfinished sequence (or a last CR) that waits for the next chunk; a
// sequence longer than kMaxControlSequence is not one, and is dropped.
struct TerminalText {
  std::string text;
  std::size_t consumed = 0;
};
inline constexpr std::size_t kMaxControlSequence = 4096;
TerminalText terminal_text(std::string_view bytes);

}  // namespace ddp::jobs::dashboard
