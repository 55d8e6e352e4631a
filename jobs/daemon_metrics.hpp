#pragma once
// The daemon's Prometheus text (GET /metrics): the job manager's counts and the API's request
// counter, rendered here so that neither knows the exposition format.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ddp::jobs {

struct JobCounts {
  std::array<int, 8> by_state{};  // indexed by JobState
  std::size_t queue_length = 0;
  int slots_total = 0, slots_in_use = 0, gpus_total = 0, gpus_in_use = 0;
  std::uint64_t restarts_total = 0;   // worker-group restarts and daemon retries
  std::uint64_t submitted_total = 0;  // jobs submitted (and recovered)
  // Jobs that are not over: each straggling rank's latest ratio (its step rate ÷ the median).
  struct Straggler {
    std::int64_t job = 0;
    int rank = 0;
    double ratio = 0;
  };
  std::vector<Straggler> stragglers;
};

std::string prometheus_text(const JobCounts& counts, std::uint64_t http_requests_total);

}  // namespace ddp::jobs
