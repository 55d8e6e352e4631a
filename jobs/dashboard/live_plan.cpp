#include "jobs/dashboard/live_plan.hpp"

#include <algorithm>

namespace ddp::jobs::dashboard {

void LivePlan::mark(Topic topic, TimePoint now) {
  auto& since = since_[index(topic)];
  if (!since) since = now;
}

void LivePlan::backlog(Topic topic, TimePoint now) {
  mark(topic, now);
  now_[index(topic)] = true;
}

TimePoint LivePlan::due(std::size_t t) const {
  auto at = now_[t] ? *since_[t] : *since_[t] + timings_.coalesce;
  if (t == index(Topic::Metrics) && metrics_sent_) at = std::max(at, *metrics_sent_ + timings_.metrics_every);
  return at;
}

TimePoint LivePlan::next_due() const {
  auto at = last_message_ + timings_.heartbeat;
  for (std::size_t t = 0; t < kTopics; ++t) {
    if (since_[t]) at = std::min(at, due(t));
  }
  return at;
}

bool LivePlan::Batch::empty() const {
  return !heartbeat && std::none_of(topics.begin(), topics.end(), [](bool b) { return b; });
}

LivePlan::Batch LivePlan::take(TimePoint now) {
  Batch b;
  for (std::size_t t = 0; t < kTopics; ++t) {
    if (!since_[t] || due(t) > now) continue;
    b.topics[t] = true;
    since_[t].reset();
    now_[t] = false;
    if (t == index(Topic::Metrics)) metrics_sent_ = now;
  }
  if (b.empty() && now >= last_message_ + timings_.heartbeat) b.heartbeat = true;
  if (!b.empty()) last_message_ = now;
  return b;
}

}  // namespace ddp::jobs::dashboard
