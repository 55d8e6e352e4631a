#include "jobs/run_outcome.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <string.h>

#include <algorithm>
#include <cmath>

#include "common/duration.hpp"
#include "common/exit_status.hpp"

namespace ddp::jobs {

using json = nlohmann::json;

namespace {

// The first line of a rank's error file (root_cause carries it): "ValueError: boom", not the
// traceback; at most 200 bytes, never cut inside a UTF-8 character.
std::string first_error_line(std::string error) {
  error = error.substr(0, error.find('\n'));
  constexpr std::size_t kMaxError = 200;
  if (error.size() > kMaxError) {
    std::size_t cut = kMaxError;
    while (cut > 0 && (static_cast<unsigned char>(error[cut]) & 0xC0) == 0x80) --cut;
    error = error.substr(0, cut) + "…";
  }
  return error;
}

// A failed rank as a rank_exited or root_cause event names it: 128 + N for a signal.
struct RankFailure {
  int code = 0;
  std::string text;  // "rank 1 exited with code 3: ValueError: boom"
};

std::optional<RankFailure> rank_failure_of(int rank, const ExitStatus& status,
                                           const std::optional<std::string>& error) {
  if (status.succeeded()) return std::nullopt;
  RankFailure f{status.shell_code(), fmt::format("rank {} {}", rank, exit_predicate(status))};
  if (error) {
    auto line = first_error_line(*error);
    if (!line.empty()) f.text += ": " + line;
  }
  return f;
}

// What a filestore_found event adds to the failure: the file, its age, and the command that clears it.
std::string filestore_note(const events::FilestoreFound& f) {
  const std::string age =
      f.age_s ? fmt::format(", last written {} before the run", describe_age(*f.age_s)) : std::string();
  if (f.verdict == "stale") {
    if (f.removed)
      return fmt::format("stale FileStore {} (left by an earlier run{}) removed before the restart", f.path, age);
    return fmt::format("stale FileStore {} (left by an earlier run{}): remove it with `ddp-launch clean {}`", f.path,
                       age, f.path);
  }
  if (f.verdict == "in_use") {
    return fmt::format("FileStore {} is in use by a process outside this run; `ddp-launch clean {}` shows which",
                       f.path, f.path);
  }
  return fmt::format("FileStore {} may be stale{}; check it with `ddp-launch clean --dry-run {}`", f.path, age, f.path);
}

}  // namespace

std::string hang_text(const events::HangDetected& h) {
  std::string out;
  const double silent = h.silent_s.empty() ? 0 : h.silent_s.front();
  if (h.first_by_s && *h.first_by_s < 0.05) {
    out = fmt::format("ranks {} stopped making progress together ({:.1f} s, --hang-timeout {}): a hang",
                      fmt::join(h.ranks, ", "), silent, h.hang_timeout);
  } else {
    out = fmt::format("rank {} hung: no progress for {:.1f} s (--hang-timeout {})", h.suspect, silent, h.hang_timeout);
    if (h.ranks.size() > 1) {
      out += fmt::format("; rank(s) {} waited", fmt::join(std::vector<int>(h.ranks.begin() + 1, h.ranks.end()), ", "));
    }
  }
  if (h.stacks_file) out += fmt::format(" (stacks: {})", *h.stacks_file);
  return out;
}

void absorb_event(RunMemory& m, const events::Event& ev) {
  // rank_exited comes in reap order, so its first failure may be a rank that only lost its peer;
  // root_cause (supervisors since the failure summary) is the verdict and replaces it. Older
  // streams have no root_cause: the first failing rank_exited stays the reason.
  if (const auto* hang = ev.as<events::HangDetected>()) {
    m.first_failure = hang_text(*hang);
    m.first_failure_code.reset();
    m.hang_suspect = hang->suspect;
  } else if (const auto* exited = ev.as<events::RankExited>()) {
    auto failure = rank_failure_of(exited->rank, exited->status, std::nullopt);
    if (failure && m.hang_suspect) {
      if (exited->rank == *m.hang_suspect) m.first_failure_code = failure->code;  // the text stays the hang's
    } else if (failure && !m.first_failure_code) {
      m.first_failure_code = failure->code;
      m.first_failure = failure->text;
    }
  } else if (const auto* cause = ev.as<events::RootCause>()) {
    if (auto failure = rank_failure_of(cause->rank, cause->status, cause->error)) {
      m.first_failure_code = failure->code;
      m.first_failure = failure->text;
    }
  } else if (const auto* found = ev.as<events::FilestoreFound>()) {
    // After the attempt's root_cause: the file its ranks met on is part of why it failed.
    auto note = filestore_note(*found);
    m.first_failure = m.first_failure.empty() ? note : m.first_failure + "; " + note;
  } else if (const auto* restarting = ev.as<events::Restarting>()) {
    if (restarting->restarts_left) m.restarts_left = restarting->restarts_left;
    m.no_progress_restarts = restarting->no_progress_restarts;
    m.hang_suspect.reset();
    m.previous_failure = m.first_failure;
    m.first_failure_code.reset();
    m.first_failure.clear();
  } else if (const auto* finished = ev.as<events::Finished>()) {
    m.finished_seen = true;
    m.finished_exit = finished->exit_code;
  } else if (const auto* straggler = ev.as<events::Straggler>()) {
    m.stragglers[straggler->rank] = {*straggler, ev.time};
  }
}

void absorb_executor_end(RunMemory& m, bool succeeded, int exit_code, const std::string& reason) {
  m.finished_seen = true;
  m.finished_exit = succeeded ? 0 : std::max(1, exit_code);
  m.end_reason = reason;
  if (!succeeded && m.first_failure.empty()) {
    m.first_failure_code = exit_code;
    m.first_failure = reason;
  }
}

EventLines parse_event_lines(std::string_view data) {
  EventLines out;
  auto last_newline = data.rfind('\n');
  if (last_newline == std::string_view::npos) return out;  // only a partial line so far
  out.consumed = last_newline + 1;
  std::size_t start = 0;
  while (start <= last_newline) {
    auto nl = data.find('\n', start);
    auto line = data.substr(start, nl - start);
    start = nl + 1;
    if (line.empty()) continue;
    try {
      auto raw = json::parse(line);
      auto event = events::from_json(raw);
      out.events.push_back({std::move(event), std::move(raw)});
    } catch (const std::exception& e) {
      out.unreadable.emplace_back(e.what());
    }
  }
  return out;
}

namespace {

std::string failure_text(const RunMemory& m, const RunEnd& end) {
  if (!m.first_failure.empty()) return m.first_failure;
  const auto& ws = end.supervisor_exit;
  if (m.finished_seen) {
    return fmt::format("the supervisor {}", exit_predicate(ExitStatus::exited(m.finished_exit.value_or(-1))));
  }
  if (ws && ws->signal != 0) {
    return fmt::format("the supervisor (pid {}) {} before it finished", end.pid, exit_predicate(*ws));
  }
  if (ws && ws->signal == 0) {
    return fmt::format("the supervisor (pid {}) {} before it started the job (see {}/supervisor.log)", end.pid,
                       exit_predicate(*ws), end.run_dir);
  }
  return fmt::format("the supervisor (pid {}) ended without a finished event (see {}/supervisor.log)", end.pid,
                     end.run_dir);
}

}  // namespace

RunVerdict judge_run(const RunMemory& m, const RunEnd& end) {
  RunVerdict v;
  const auto& ws = end.supervisor_exit;
  v.exit_code = end.recorded_exit;
  if (m.finished_exit) {
    v.exit_code = m.finished_exit;
  } else if (ws) {
    v.exit_code = ws->shell_code();
  }
  v.succeeded = m.finished_seen ? m.finished_exit == 0 : v.exit_code == 0;
  if (v.succeeded) {
    v.text = m.end_reason.empty() ? "all ranks exited with code 0" : m.end_reason;
  } else {
    v.text = failure_text(m, end);
  }
  return v;
}

RetryDecision decide_retry(const JobSpec& spec, int runs_so_far, std::optional<int> exit_code,
                           const std::optional<std::string>& log_match) {
  const auto& r = spec.restart;
  if (r.policy == RestartPolicy::Never) return {false, 0, "restart.policy is never"};
  if (log_match) return {false, 0, fmt::format("the log matched no-retry pattern '{}'", *log_match)};
  int retries_done = runs_so_far - 1;
  if (retries_done >= r.max_retries) {
    return {false, 0, fmt::format("retries exhausted ({} of {})", retries_done, r.max_retries)};
  }
  if (r.policy == RestartPolicy::ExitCode) {
    bool retryable = exit_code && std::any_of(r.retryable_exit_codes.begin(), r.retryable_exit_codes.end(),
                                              [&](const ExitCodeRange& x) { return x.contains(*exit_code); });
    if (!retryable) {
      return {false, 0, exit_code ? fmt::format("exit code {} is not retryable", *exit_code) : "exit code unknown"};
    }
  }
  double delay = r.backoff_initial_s * std::pow(r.backoff_factor, retries_done);
  delay = std::min(delay, r.backoff_max_s);
  return {true, delay, fmt::format("retry {} of {} in {}s", retries_done + 1, r.max_retries, format_seconds(delay))};
}

}  // namespace ddp::jobs
