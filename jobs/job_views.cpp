// JobViews (job_views.hpp): the JSON the API answers (cached per generation), a job's transitions
// and events, its log files and the metrics its spec's regexes find in its ranks' output.
#include "jobs/job_views.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "common/user_regex.hpp"
#include "jobs/run_logs.hpp"
#include "jobs/run_outcome.hpp"
#include "launcher/outputs/metrics.hpp"

namespace ddp::jobs {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
// The run's straggling ranks, each with its latest verdict (rank order).
json stragglers_json(const RunMemory& run) {
  json out = json::array();
  for (const auto& [rank, seen] : run.stragglers) {
    const auto& v = seen.verdict;
    out.push_back({{"rank", rank},
                   {"attempt", v.attempt},
                   {"ratio", v.ratio},
                   {"median_step_s", v.median_step_s},
                   {"rank_step_s", v.rank_step_s},
                   {"time", seen.time}});
  }
  return out;
}

// The hang watchdog's findings over every run of the job (hang_detected events), oldest first.
json hangs_of(const std::vector<EventRow>& rows) {
  json out = json::array();
  for (const auto& row : rows) {
    try {
      auto e = events::from_json(json::parse(row.data_json));
      const auto* h = e.as<events::HangDetected>();
      if (!h) continue;
      out.push_back({{"run", row.run},
                     {"attempt", h->attempt},
                     {"time", row.time},
                     {"suspect", h->suspect},
                     {"ranks", h->ranks},
                     {"silent_s", h->silent_s},
                     {"text", hang_text(*h)}});
    } catch (const std::exception&) {
      // a line the daemon could not read was reported when it arrived
    }
  }
  return out;
}

json transition_json(const TransitionRow& t) {
  return {{"time", t.time}, {"from", t.from}, {"to", t.to}, {"reason", t.reason}, {"run", t.run}};
}

// The event's own JSON line (as the supervisor wrote it) and the run it belongs to.
json event_json(const EventRow& e) {
  json data;
  try {
    data = json::parse(e.data_json);
  } catch (const std::exception&) {
  }
  if (!data.is_object()) data = {{"event", e.type}, {"text", e.data_json}};  // rows are written as objects
  data["run"] = e.run;
  return data;
}

}  // namespace

ManagedJob& JobBook::find(JobId id) {
  auto it = jobs.find(id);
  if (it == jobs.end())
    throw JobError(JobErrorKind::NotFound, fmt::format("no job with id {} (ddp-launch list shows the jobs)", id));
  return *it->second;
}

const ManagedJob& JobBook::find(JobId id) const { return const_cast<JobBook&>(*this).find(id); }

json JobViews::to_json(const ManagedJob& job, bool detail) const {
  const auto& r = job.rec;
  json j{{"id", r.id},
         {"name", r.name},
         {"state", std::string(state_name(r.state))},
         {"reason", r.reason},
         {"priority", r.priority},
         {"runs", r.runs},
         {"restarts", r.restarts},
         {"submitted_at", r.submitted_at},
         {"started_at", r.started_at},
         {"finished_at", r.finished_at},
         {"exit_code", r.exit_code ? json(*r.exit_code) : json(nullptr)},
         {"pid", r.pid},
         {"gpus", r.gpus},
         {"slots", job.spec.resources.nproc_per_node},
         {"nproc_per_node", job.spec.resources.nproc_per_node},
         {"gpus_per_node", job.spec.resources.gpus_per_node},
         {"nodes", job.spec.resources.nodes},
         {"executor", job.spec.executor}};
  if (!r.external_id.empty()) j["slurm_job_id"] = r.external_id;
  // The current run's restart budget, once its supervisor restarted (its `restarting` events): of the
  // job's max_restarts, `used` (charged: every restart, or only those without progress under
  // restart_budget: progress) and `restarts_left` after the latest restart.
  if (job.run.restarts_left) {
    const int max = job.spec.distributed.max_restarts;
    j["restart_budget"] = {{"max_restarts", max},
                           {"used", max - *job.run.restarts_left},
                           {"restarts_left", *job.run.restarts_left},
                           {"counts", job.spec.distributed.restart_budget},
                           {"no_progress_restarts", job.run.no_progress_restarts}};
  }
  if (r.state == JobState::Pending || (r.state == JobState::Restarting && r.pid == 0)) {
    if (auto why = scheduler_.pending_reason(r.id)) j["pending_reason"] = *why;
  }
  if (detail) {
    j["spec"] = r.spec_yaml;
    j["run_dir"] = r.run_dir;
    j["stragglers"] = stragglers_json(job.run);
    j["hangs"] = hangs_of(db_.events(r.id, "hang_detected"));
  }
  return j;
}

const std::string& JobViews::cached_text(const ManagedJob& job, bool detail) const {
  auto& text = detail ? job.detail : job.summary;
  auto& at = detail ? job.detail_at : job.summary_at;
  if (at != book_.generation) {
    text = to_json(job, detail).dump(-1, ' ', false, json::error_handler_t::replace);
    at = book_.generation;
  }
  return text;
}

std::string JobViews::list_text(std::optional<JobState> state, std::size_t limit) const {
  std::string out = "{\"jobs\":[";
  std::size_t n = 0;
  for (auto it = book_.jobs.rbegin(); it != book_.jobs.rend() && n < limit; ++it) {
    if (state && it->second->rec.state != *state) continue;
    if (n++) out += ',';
    out += cached_text(*it->second, false);
  }
  out += fmt::format("],\"total\":{}}}\n", book_.jobs.size());
  return out;
}

std::string JobViews::get_text(JobId id) const { return cached_text(book_.find(id), true) + "\n"; }

json JobViews::get(JobId id) const { return to_json(book_.find(id), true); }

json JobViews::events(JobId id) const {
  book_.find(id);
  json transitions = json::array();
  for (const auto& t : db_.transitions(id)) transitions.push_back(transition_json(t));
  json evs = json::array();
  for (const auto& e : db_.events(id)) evs.push_back(event_json(e));
  return {{"id", id}, {"transitions", transitions}, {"events", evs}};
}

json JobViews::timeline_since(JobId id, TimelineCursor& cursor, std::size_t limit) const {
  book_.find(id);
  json transitions = json::array();
  for (const auto& t : db_.transitions_after(id, cursor.transitions, limit)) {
    transitions.push_back(transition_json(t));
    cursor.transitions = t.seq;
  }
  json evs = json::array();
  for (const auto& e : db_.events_after(id, cursor.events, limit)) {
    evs.push_back(event_json(e));
    cursor.events = e.seq;
  }
  return {{"transitions", transitions}, {"events", evs}};
}

json JobViews::host() const {
  json gpus = json::array();
  for (int g : inventory_.gpu_indices) {
    auto owner = scheduler_.gpu_owner(g);
    gpus.push_back({{"index", g}, {"job", owner ? json(*owner) : json(nullptr)}});
  }
  json queue = json::array();
  for (JobId id : scheduler_.queued()) {
    const auto& job = book_.find(id);
    queue.push_back({{"id", id},
                     {"name", job.rec.name},
                     {"priority", job.rec.priority},
                     {"slots", job.spec.resources.nproc_per_node},
                     {"gpus", job.spec.resources.gpus_per_node},
                     {"submitted_at", job.rec.submitted_at},
                     {"reason", scheduler_.pending_reason(id).value_or(job.rec.reason)}});
  }
  json by_state = json::object();
  for (const auto& [id, job] : book_.jobs) {
    auto name = std::string(state_name(job->rec.state));
    by_state[name] = by_state.value(name, 0) + 1;
  }
  return {{"slots_total", scheduler_.slots_total()},
          {"slots_in_use", scheduler_.slots_in_use()},
          {"gpus", gpus},
          {"queue", queue},
          {"jobs_by_state", by_state},
          {"jobs_total", book_.jobs.size()},
          {"state_dir", state_dir_status()}};
}

bool JobViews::is_finished(JobId id) const { return is_terminal(book_.find(id).rec.state); }

std::string JobViews::run_dir(JobId id) const { return book_.find(id).rec.run_dir; }

std::optional<fs::path> JobViews::log_path(JobId id, const std::string& rank, const std::string& stream) const {
  const auto& job = book_.find(id);
  if (job.rec.run_dir.empty()) return std::nullopt;
  return executor_of_(job).log_path(job.rec.run_dir, run_handle(job.rec), rank, stream);
}

json JobViews::job_metrics(JobId id) const {
  const auto& job = book_.find(id);
  auto files = job.rec.run_dir.empty() ? std::map<int, fs::path>() : rank_stdout_files(job.rec.run_dir);
  std::vector<std::pair<std::string, UserRegex>> patterns;  // RE2: safe on lines of any length
  for (const auto& [name, pattern] : job.spec.metrics) patterns.emplace_back(name, UserRegex(pattern));
  json ranks = json::object(), steps = json::object(), sources = json::object();
  for (const auto& [rank, path] : files) {
    std::string text = patterns.empty() ? std::string() : read_file_tail(path, 4 << 20);
    json series = json::object(), at = json::object();
    for (const auto& [name, re] : patterns) series[name] = json::array(), at[name] = json::array();
    // Line by line, as the supervisor's recorder writes metrics.csv (launcher::MetricExtractor) and
    // `ddp-launch report` charts it: a value's step is the line's `step` (a `step` pattern of the
    // job file, or an `@ddp-metric step=N` line), else its count on that rank (1, 2, …).
    std::map<std::string, std::int64_t> counts;
    std::string_view rest = text;
    while (!rest.empty()) {
      auto nl = rest.find('\n');
      auto line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view{} : rest.substr(nl + 1);
      std::optional<double> line_step;
      if (auto sdk = launcher::parse_metric_line(line)) {
        for (const auto& v : *sdk) {
          if (v.name == "step") line_step = v.value;
        }
      }
      std::vector<std::pair<const std::string*, double>> matched;
      for (const auto& [name, re] : patterns) {
        re.for_each(line, [&](std::string_view v) {
          auto x = launcher::parse_metric_number(v);
          if (!x) return;
          if (name == "step") line_step = *x;  // as the recorder: the pattern over the SDK key
          matched.emplace_back(&name, *x);
        });
      }
      for (const auto& [name, value] : matched) {
        auto count = ++counts[*name];
        series[*name].push_back(value);
        at[*name].push_back(line_step ? *line_step : static_cast<double>(count));
      }
    }
    ranks[std::to_string(rank)] = series;
    steps[std::to_string(rank)] = at;
    sources[std::to_string(rank)] = path.string();
  }
  // "metrics": rank 0's series, as before (the rank that usually logs), empty ones without it.
  json rank0 = json::object();
  for (const auto& [name, re] : patterns) rank0[name] = ranks.contains("0") ? ranks["0"][name] : json::array();
  return {{"id", id},         {"source", sources.contains("0") ? sources["0"] : json("")},
          {"metrics", rank0}, {"ranks", ranks},
          {"steps", steps},   {"sources", sources}};
}

JobCounts JobViews::counts() const {
  JobCounts c;
  for (const auto& [id, job] : book_.jobs) ++c.by_state[static_cast<std::size_t>(job->rec.state)];
  c.queue_length = scheduler_.queue_length();
  c.slots_total = scheduler_.slots_total();
  c.slots_in_use = scheduler_.slots_in_use();
  c.gpus_total = scheduler_.gpus_total();
  c.gpus_in_use = scheduler_.gpus_in_use();
  c.restarts_total = book_.restarts_total;
  c.submitted_total = book_.submitted_total;
  for (const auto& [id, job] : book_.jobs) {
    if (is_terminal(job->rec.state)) continue;
    for (const auto& [rank, seen] : job->run.stragglers) c.stragglers.push_back({id, rank, seen.verdict.ratio});
  }
  return c;
}

json JobViews::state_dir_status() const {
  json out{{"path", state_dir_.string()}, {"writable", !book_.write_trouble}, {"unsaved_jobs", book_.unsaved.size()}};
  if (book_.write_trouble) {
    out["error"] = book_.write_trouble->error;
    out["since"] = book_.write_trouble->since;
    out["failed_writes"] = book_.write_trouble->failures;
    out["retry_ms"] = book_.write_trouble->backoff.count();
  } else {
    out["error"] = nullptr;
  }
  return out;
}

}  // namespace ddp::jobs
