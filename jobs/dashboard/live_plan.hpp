#pragma once
// LivePlan: when a dashboard live stream writes, and what — pure (the time is an argument).
//
// A stream sends topics (the job list, the host, one job, its timeline, a log, a chart). A change
// marks its topic; the message is composed from the current state when the topic falls due, not
// when the change happened, so a burst of changes (a thousand log lines, every rank's events)
// becomes one message, and a slow reader gets fewer, fresher messages instead of a growing queue:
//
//   mark(topic) ─► due at first mark + coalesce (a backlog: at once; the chart: not before its
//                  last + metrics_every) ─► take() ─► the shell composes and writes ─► next_due()
//
// Nothing due for `heartbeat`: take() asks for a comment (finds a dead peer, keeps proxies open).
#include <array>
#include <chrono>
#include <cstddef>
#include <optional>

#include "jobs/dashboard/session.hpp"  // TimePoint

namespace ddp::jobs::dashboard {

enum class Topic : std::size_t { Jobs, Host, Job, Timeline, Log, Metrics };
inline constexpr std::size_t kTopics = 6;

struct LiveTimings {
  std::chrono::milliseconds coalesce{100};        // a change waits this long for those that follow it
  std::chrono::milliseconds metrics_every{1000};  // the chart is recomputed at most this often
  std::chrono::milliseconds heartbeat{15000};     // a comment after this long without a message
};

class LivePlan {
 public:
  LivePlan(LiveTimings timings, TimePoint now) : timings_(timings), last_message_(now) {}

  void mark(Topic topic, TimePoint now);     // it changed
  void backlog(Topic topic, TimePoint now);  // the last message left some of it: due again at once
  bool pending(Topic topic) const { return since_[index(topic)].has_value(); }

  // When the next message is due (a heartbeat at the latest).
  TimePoint next_due() const;

  struct Batch {
    std::array<bool, kTopics> topics{};
    bool heartbeat = false;
    bool has(Topic t) const { return topics[index(t)]; }
    bool empty() const;
  };
  // What is due at `now` (and no longer pending); counts as a message sent when not empty.
  Batch take(TimePoint now);

 private:
  static constexpr std::size_t index(Topic t) { return static_cast<std::size_t>(t); }
  TimePoint due(std::size_t topic) const;
  LiveTimings timings_;
  std::array<std::optional<TimePoint>, kTopics> since_{};  // marked since: pending
  std::array<bool, kTopics> now_{};                        // a backlog: no coalescing
  std::optional<TimePoint> metrics_sent_;
  TimePoint last_message_;
};

}  // namespace ddp::jobs::dashboard
