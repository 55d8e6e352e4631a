#include "jobs/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace ddp::jobs {

Scheduler::Scheduler(HostInventory inventory) : inventory_(std::move(inventory)) {
  std::sort(inventory_.gpu_indices.begin(), inventory_.gpu_indices.end());
  inventory_.gpu_indices.erase(std::unique(inventory_.gpu_indices.begin(), inventory_.gpu_indices.end()),
                               inventory_.gpu_indices.end());
}

std::optional<std::string> Scheduler::never_fits(const ResourceRequest& r) const {
  if (r.slots > inventory_.slots) {
    return fmt::format(
        "the job needs {} CPU slots (resources.nproc_per_node) but this daemon has {} "
        "(ddp-launch daemon --slots)",
        r.slots, inventory_.slots);
  }
  if (r.gpus > gpus_total()) {
    return fmt::format("the job needs {} GPUs (resources.gpus_per_node) but this daemon has {}", r.gpus, gpus_total());
  }
  return std::nullopt;
}

void Scheduler::enqueue(JobId id, int priority, std::uint64_t seq, ResourceRequest r) {
  dequeue(id);
  Queued q{id, priority, seq, r};
  auto pos = std::find_if(queue_.begin(), queue_.end(), [&](const Queued& o) {
    return o.priority < priority || (o.priority == priority && o.seq > seq);
  });
  queue_.insert(pos, q);
}

bool Scheduler::dequeue(JobId id) {
  auto it = std::find_if(queue_.begin(), queue_.end(), [&](const Queued& q) { return q.id == id; });
  if (it == queue_.end()) return false;
  queue_.erase(it);
  return true;
}

std::vector<int> Scheduler::free_gpus() const {
  std::vector<int> out;
  for (int g : inventory_.gpu_indices) {
    if (!gpu_owner_.count(g)) out.push_back(g);
  }
  return out;
}

bool Scheduler::fits(const ResourceRequest& r) const {
  return slots_used_ + r.slots <= inventory_.slots && static_cast<int>(free_gpus().size()) >= r.gpus;
}

bool Scheduler::hold(const Placement& p) {
  if (held_.count(p.id)) return false;
  if (slots_used_ + p.slots > inventory_.slots) return false;
  for (int g : p.gpus) {
    if (gpu_owner_.count(g)) return false;
    if (!std::binary_search(inventory_.gpu_indices.begin(), inventory_.gpu_indices.end(), g)) return false;
  }
  for (int g : p.gpus) gpu_owner_[g] = p.id;
  slots_used_ += p.slots;
  held_[p.id] = p;
  dequeue(p.id);
  return true;
}

void Scheduler::release(JobId id) {
  auto it = held_.find(id);
  if (it == held_.end()) return;
  for (int g : it->second.gpus) gpu_owner_.erase(g);
  slots_used_ -= it->second.slots;
  held_.erase(it);
}

std::vector<Placement> Scheduler::schedule() {
  std::vector<Placement> out;
  while (!queue_.empty() && fits(queue_.front().request)) {
    auto q = queue_.front();
    auto gpus = free_gpus();
    gpus.resize(static_cast<std::size_t>(q.request.gpus));
    Placement p{q.id, q.request.slots, gpus};
    hold(p);  // also dequeues
    out.push_back(std::move(p));
  }
  return out;
}

std::optional<std::string> Scheduler::pending_reason(JobId id) const {
  for (std::size_t i = 0; i < queue_.size(); ++i) {
    if (queue_[i].id != id) continue;
    if (i > 0) return fmt::format("queued behind job {} (priority, then submission order)", queue_[0].id);
    const auto& r = queue_[i].request;
    return fmt::format("waiting for resources: needs {} slot{} and {} GPU{}; free: {} slot{}, {} GPU{}", r.slots,
                       r.slots == 1 ? "" : "s", r.gpus, r.gpus == 1 ? "" : "s", inventory_.slots - slots_used_,
                       inventory_.slots - slots_used_ == 1 ? "" : "s", free_gpus().size(),
                       free_gpus().size() == 1 ? "" : "s");
  }
  return std::nullopt;
}

std::optional<JobId> Scheduler::gpu_owner(int gpu) const {
  auto it = gpu_owner_.find(gpu);
  if (it == gpu_owner_.end()) return std::nullopt;
  return it->second;
}

std::vector<JobId> Scheduler::queued() const {
  std::vector<JobId> out;
  out.reserve(queue_.size());
  for (const auto& q : queue_) out.push_back(q.id);
  return out;
}

}  // namespace ddp::jobs
