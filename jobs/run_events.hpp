#pragma once
// RunEventReader: a local run's supervisor event stream (run-<n>/events.jsonl) as the daemon takes
// it in: watched (platform/file_watch.hpp, no polling), read past the offset the job's record
// keeps, parsed (common/events.hpp: complete lines only; an unreadable line is logged and
// skipped), and recorded (JobDb events rows, with the new offset, in one transaction) before the
// lifecycle applies them. A restarted daemon replays the part it had applied.
#include <filesystem>
#include <functional>
#include <optional>
#include <vector>

#include "common/events.hpp"
#include "jobs/job_clock.hpp"
#include "jobs/job_db.hpp"
#include "platform/file_watch.hpp"

namespace ddp::jobs {

class RunEventReader {
 public:
  RunEventReader(platform::FileWatch& files, JobDb& db, const Clock& clock) : files_(files), db_(db), clock_(clock) {}

  static std::filesystem::path events_file(const std::filesystem::path& run_dir) { return run_dir / "events.jsonl"; }

  // on_change runs on the loop whenever the run's event file is written; nullopt when it cannot be
  // watched (missing).
  std::optional<int> watch(const std::filesystem::path& run_dir, std::function<void()> on_change);
  void unwatch(int token);

  // The complete lines past rec.events_offset, in order: recorded as events of run rec.runs - 1,
  // rec.events_offset advanced past them and rec written, in one transaction. nullopt when there
  // is no new complete line (nothing was written).
  std::optional<std::vector<events::Event>> read_new(JobRecord& rec);

  // The events before rec.events_offset: what a daemon had applied before it stopped.
  static std::vector<events::Event> replay(const JobRecord& rec);

 private:
  platform::FileWatch& files_;
  JobDb& db_;
  const Clock& clock_;
};

}  // namespace ddp::jobs
