#pragma once
// The dashboard's live stream: GET /ui/events answered with Server-Sent Events on the daemon's one
// loop. A page opens one; it gets the current state of its view at once, then what changes.
//
// Costs, by design:
// - no browser open: nothing (no watcher, timer or file watch exists);
// - a change only marks a topic (LivePlan); the message is composed from the current state when
//   the topic falls due (100 ms coalescing, the chart at most once a second, shared by every stream
//   on that job: MetricsCache), and while a message is being written nothing more is composed;
// - so a stream holds at most one message (bounded: 64 KiB of log, 500 timeline rows, 200 jobs,
//   2000 points a series) and a slow reader gets fewer, fresher messages, never a queue;
// - a message not taken by the peer within kWriteDeadline closes the stream (an abandoned
//   browser), a peer that hangs up is seen at once, and a quiet stream sends a comment every 15 s.
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "jobs/dashboard/live_frames.hpp"
#include "jobs/dashboard/session.hpp"
#include "jobs/job_manager.hpp"
#include "jobs/tcp_slot.hpp"

namespace ddp::jobs::dashboard {

inline constexpr std::chrono::seconds kWriteDeadline{30};

// A job's chart message, computed at most once a second whoever watches the job (the metrics view
// rereads every rank's output); entries a stream no longer asks for are dropped after 10 s.
class MetricsCache {
 public:
  explicit MetricsCache(JobManager& jobs) : jobs_(jobs) {}
  const std::string& frame(JobId id, TimePoint now);

 private:
  struct Entry {
    TimePoint at;
    std::string text;
  };
  JobManager& jobs_;
  std::map<JobId, Entry> entries_;
};

// Whether the stream may go on (asked before each message): its browser session is still open. An
// empty one: always (a bearer token, the unix socket).
using StillAllowed = std::function<bool(TimePoint now)>;

// Takes the connection over: writes the SSE response headers, then the view's messages until the
// peer goes away or `allowed` says no. The view was checked (parse_live_view) and its job exists.
template <class Socket>
void start_live_stream(Socket socket, JobManager& jobs, MetricsCache& metrics, const LiveView& view, TcpSlot slot,
                       StillAllowed allowed);

}  // namespace ddp::jobs::dashboard
