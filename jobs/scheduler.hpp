#pragma once
// Scheduler: the host-wide table of CPU slots and GPUs and the queue of jobs waiting for them
// (pure: values in, placements out). Order: higher priority first, FIFO (submission order)
// among equals. Strict gang rule and no backfill: a job starts only when all of its slots and
// GPUs are free, and a job that does not fit holds back every job behind it, so a big job is
// never starved by a stream of small ones. A GPU belongs to at most one job at a time.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ddp::jobs {

using JobId = std::int64_t;

struct HostInventory {
  int slots = 1;                 // CPU slots: one per rank
  std::vector<int> gpu_indices;  // the host's GPUs (NVML indices), or configured ones for tests
};

struct ResourceRequest {
  int slots = 1;
  int gpus = 0;
};

struct Placement {
  JobId id = 0;
  int slots = 0;
  std::vector<int> gpus;  // host GPU indices, ascending
};

class Scheduler {
 public:
  explicit Scheduler(HostInventory inventory);

  // Why a request can never run on this host (more slots or GPUs than exist), or nullopt.
  std::optional<std::string> never_fits(const ResourceRequest& r) const;

  // Queues a job; `seq` orders equal priorities (lower first: the submission order).
  void enqueue(JobId id, int priority, std::uint64_t seq, ResourceRequest r);
  bool dequeue(JobId id);  // removes a queued job (cancel); false if it was not queued
  // Records resources already held by a running job (re-adopted after a daemon restart).
  // Returns false (and records nothing) when the GPUs or slots are not free.
  bool hold(const Placement& p);
  void release(JobId id);  // frees what a job holds; no-op if it holds nothing

  // Takes the jobs that can start now off the queue, in order, and holds their resources.
  std::vector<Placement> schedule();

  // A pending job's reason: "waiting for resources (needs 2 slots, 1 GPU; free: …)" or "queued
  // behind job N" (higher priority or earlier); nullopt when not queued.
  std::optional<std::string> pending_reason(JobId id) const;

  std::size_t queue_length() const { return queue_.size(); }
  std::vector<JobId> queued() const;  // the queue in the order it is served
  int slots_total() const { return inventory_.slots; }
  int slots_in_use() const { return slots_used_; }
  int gpus_total() const { return static_cast<int>(inventory_.gpu_indices.size()); }
  int gpus_in_use() const { return static_cast<int>(gpu_owner_.size()); }
  std::optional<JobId> gpu_owner(int gpu) const;

 private:
  struct Queued {
    JobId id;
    int priority;
    std::uint64_t seq;
    ResourceRequest request;
  };
  std::vector<int> free_gpus() const;
  bool fits(const ResourceRequest& r) const;

  HostInventory inventory_;
  std::vector<Queued> queue_;  // kept sorted: priority descending, then seq ascending
  std::map<JobId, Placement> held_;
  std::map<int, JobId> gpu_owner_;
  int slots_used_ = 0;
};

}  // namespace ddp::jobs
