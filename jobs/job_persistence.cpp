// JobManager's writes to the job database, and what happens when one fails (a full state
// directory, a quota, an I/O error). The job's life goes on in memory: a run that ends is settled,
// its slots are freed and the next job starts, whatever the disk does. What could not be written
// is kept: the job's record (written whole), its transitions in order, and the byte ranges of its
// runs' event files (the rows are rebuilt from the run's own file when written, so nothing of a
// chatty run piles up in memory). A timer writes them again with a bounded back-off (0.5 s,
// doubling, at most 30 s) until the database takes them. While it lasts it is said: a log line when
// it starts and when it ends, GET /v1/host's "state_dir", the dashboard's banner.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>
#include <fstream>

#include "common/clock.hpp"
#include "jobs/job_manager.hpp"
#include "jobs/managed_job.hpp"
#include "jobs/run_outcome.hpp"

namespace ddp::jobs {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr std::chrono::milliseconds kFirstRetry{500};
constexpr std::chrono::milliseconds kLongestRetry{30000};

// The rows of the events in [from, to) of a run's event file: whole lines, as read_events applied them.
std::vector<EventRow> event_rows(const std::string& run_dir, int run, std::int64_t from, std::int64_t to, double now) {
  std::vector<EventRow> rows;
  std::ifstream in(fs::path(run_dir) / "events.jsonl", std::ios::binary);
  if (!in) return rows;  // the file is gone: its rows cannot be rebuilt (the record still says where it ended)
  in.seekg(from);
  std::string data(static_cast<std::size_t>(to - from), '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<std::size_t>(in.gcount()));
  for (const auto& line : parse_event_lines(data).events) {
    rows.push_back({line.event.time > 0 ? line.event.time : now, run, events::type_name(line.event.payload),
                    line.raw.dump(-1, ' ', false, json::error_handler_t::replace)});
  }
  return rows;
}

}  // namespace

void JobManager::save(Job& job, std::optional<TransitionRow> transition) {
  if (transition) job.unsaved_transitions.push_back(std::move(*transition));
  book_.unsaved.insert(job.rec.id);
  // While the database refuses writes the timer retries, in order; a write now would only fail again.
  if (book_.write_trouble) return;
  if (auto why = write_unsaved(job)) on_write_failed(*why);
}

void JobManager::note_events(Job& job, std::int64_t from, std::int64_t to) {
  if (to <= from) return;
  auto& ranges = job.unsaved_events;
  if (!ranges.empty() && ranges.back().run_dir == job.rec.run_dir && ranges.back().to == from) {
    ranges.back().to = to;
  } else {
    ranges.push_back({job.rec.run_dir, std::max(0, job.rec.runs - 1), from, to});
  }
}

// One transaction: the job's event rows, its transitions, then its record (whose events_offset
// says those rows are in). The error when the database refused it.
std::optional<std::string> JobManager::write_unsaved(Job& job) {
  try {
    db_.transaction([&] {
      for (const auto& r : job.unsaved_events) {
        for (const auto& row : event_rows(r.run_dir, r.run, r.from, r.to, now())) db_.add_event(job.rec.id, row);
      }
      for (const auto& t : job.unsaved_transitions) db_.add_transition(job.rec.id, t);
      db_.update_job(job.rec);
    });
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  job.unsaved_events.clear();
  job.unsaved_transitions.clear();
  book_.unsaved.erase(job.rec.id);
  return std::nullopt;
}

void JobManager::on_write_failed(const std::string& why) {
  if (!book_.write_trouble) {
    book_.write_trouble = WriteTrouble{why, now(), 0, kFirstRetry};
    spdlog::error(
        "daemon: cannot write the job database in {} ({}): the jobs go on, their state is kept in memory and "
        "written when the database takes writes again (retried after {} ms, then less often, at most every {} s); "
        "free space there",
        config_.state_dir.string(), why, kFirstRetry.count(), kLongestRetry.count() / 1000);
  } else {
    book_.write_trouble->error = why;
    book_.write_trouble->backoff = std::min(book_.write_trouble->backoff * 2, kLongestRetry);
  }
  ++book_.write_trouble->failures;
  ++book_.generation;  // the views show it
  flush_timer_ = std::make_unique<boost::asio::steady_timer>(io_, book_.write_trouble->backoff);
  flush_timer_->async_wait([this](boost::system::error_code ec) {
    if (!ec) flush_unsaved();
  });
}

void JobManager::flush_unsaved() {
  const auto waiting = book_.unsaved.size();
  for (JobId id : std::vector<JobId>(book_.unsaved.begin(), book_.unsaved.end())) {
    if (auto why = write_unsaved(find(id))) {
      on_write_failed(*why);  // still refused: later, less often
      return;
    }
  }
  if (book_.write_trouble) {
    spdlog::info("daemon: the job database in {} takes writes again: {} job(s)' state written after {:.0f} s",
                 config_.state_dir.string(), waiting, now() - book_.write_trouble->since);
    book_.write_trouble.reset();
    ++book_.generation;
  }
}


}  // namespace ddp::jobs
