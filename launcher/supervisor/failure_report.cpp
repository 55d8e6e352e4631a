#include "launcher/supervisor/failure_report.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>
#include <sstream>

#include "common/exit_status.hpp"
#include "common/signals.hpp"
#include "launcher/supervisor/failure_hints.hpp"

namespace ddp::launcher {
namespace {

std::string heading(const FailureReportInput& in) {
  return in.final ? fmt::format("ddp-launch: job {} after {} attempt(s), exit code {}", group_state_name(in.state),
                                in.attempt + 1, in.exit_code)
                  : fmt::format("ddp-launch: attempt {} failed", in.attempt);
}

std::string clock_time(double t) {
  auto ms = std::llround(t * 1000);
  return fmt::format("{:%H:%M:%S}.{:03d}", fmt::localtime(static_cast<std::time_t>(ms / 1000)), ms % 1000);
}

std::string how_it_ended(const AttributedFailure& a, const RankEvidence* ev) {
  const RankExit& x = a.exit;
  std::string how = describe_exit(ExitStatus::of(x.exit_code, x.signal), ev ? ev->oom : std::nullopt);
  if (ev && ev->timer_kill) {
    const auto& t = *ev->timer_kill;
    auto to = t.pid != 0 && t.pid != x.pid ? fmt::format(" to its process {}", t.pid) : std::string();
    how += fmt::format(" (the torch elastic timer sent {}{}: scope {} missed its deadline {})",
                       sig::signal_name(t.signal), to, t.scope_id, clock_time(t.deadline));
  }
  if (a.role != FailureRole::Original) how += fmt::format(" ({})", failure_role_name(a.role));
  return how;
}

std::string timer_details(const TimerKillEvidence& t) {
  auto out = fmt::format(
      "    torch elastic timer: the `with expires(...)` block at {} did not finish by {}; {} sent at {} "
      "({:.2f} s later)\n",
      t.scope_id, clock_time(t.deadline), sig::signal_name(t.signal), clock_time(t.sent_at), t.sent_at - t.deadline);
  // torch 1.13's expires() names its default scope after the frame above its own: contextlib's.
  if (t.scope_id.find("contextlib.py#") != std::string::npos) {
    out +=
        "    (that is torch's default scope, which names contextlib, not your code: pass scope=\"...\" to "
        "expires() to name the block)\n";
  }
  return out;
}

// The root cause's own words: its error file, its last stderr lines, a hint.
std::string root_cause_details(const RankEvidence& ev, const std::vector<std::string>& worker_argv) {
  std::string out;
  if (ev.timer_kill) out += timer_details(*ev.timer_kill);
  if (ev.error_file) out += fmt::format("    error file: {}\n", ev.error_file->message);
  if (!ev.last_stderr.empty()) {
    out += "    last stderr lines:\n";
    for (const auto& l : ev.last_stderr) out += fmt::format("      {}\n", l);
  }
  if (auto hint = missing_torch_hint(ev.last_stderr, worker_argv)) out += fmt::format("    Hint: {}\n", *hint);
  return out;
}

}  // namespace

void read_error_file(const std::filesystem::path& path, RankEvidence& evidence) {
  std::ifstream in(path);
  if (!in) return;
  std::stringstream text;
  text << in.rdbuf();
  evidence.error_file = error_file_record(text.str(), path.string());
  std::error_code ec;
  const auto written = std::filesystem::last_write_time(path, ec);
  if (!ec) {
    const auto since_epoch = std::chrono::file_clock::to_sys(written).time_since_epoch();
    evidence.error_file_written = std::chrono::duration<double>(since_epoch).count();
  }
}

// The root cause first (root_cause.hpp: by evidence, then time), with the worker's own error file
// when it wrote one.
FailureReport failure_report(const FailureReportInput& in) {
  FailureReport report;
  if (in.failures.empty() && !in.final) return report;
  std::vector<FailureRecord> records;
  for (const auto& ev : in.evidence) {
    FailureRecord rec;
    if (ev && ev->error_file) rec.recorded_at = ev->error_file_written;
    rec.lost_peer =
        record_says_lost_peer(ev ? ev->error_file : std::nullopt, ev ? ev->last_stderr : std::vector<std::string>{});
    if (ev && ev->timer_kill) rec.timer_killed_at = ev->timer_kill->sent_at;
    records.push_back(rec);
  }
  auto ordered = attribute_failures(in.failures, records, in.teardown_began);
  std::string out = fmt::format("\n{}\n", heading(in));
  // A handled signal stopped the job: the ranks' deaths are its consequence, not a root cause.
  bool first = in.stop_signal == 0 && !in.rendezvous_timed_out && !in.hang_detected;
  if (in.rendezvous_timed_out) out += fmt::format("  Root cause: {}\n", in.rendezvous_report);
  if (in.hang_detected && in.hang) out += fmt::format("  Root cause: {}\n", hang_report(*in.hang)) + in.hang_evidence;
  if (!in.rendezvous_close_reason.empty()) {
    out += fmt::format("  Root cause: the rendezvous ended the job: {}\n", in.rendezvous_close_reason);
    first = false;
  }
  if (in.stop_signal != 0) {
    out += fmt::format("  Stopped by {} (forwarded to every worker group)\n", sig::signal_name(in.stop_signal));
  }
  for (const auto& a : ordered) {
    const RankExit& x = a.exit;
    const auto& slot = in.evidence[a.observed];
    const RankEvidence* ev = slot ? &*slot : nullptr;
    const int rank = ev ? ev->rank : x.local_rank;
    auto t = static_cast<std::time_t>(x.time);
    out += fmt::format("{} rank {} (local {}) on node {} ({}), pid {}: {} at {:%H:%M:%S}\n",
                       first ? "  Root cause:" : "  Rank:", rank, x.local_rank, ev ? ev->group_rank : in.node_rank,
                       in.node_name, x.pid, how_it_ended(a, ev), fmt::localtime(t));
    if (first) {
      report.root_cause = RootCauseEvent{in.attempt, rank, x, std::string(failure_role_name(a.role)),
                                         ev && ev->error_file ? std::optional(ev->error_file->message) : std::nullopt};
      if (ev) out += root_cause_details(*ev, in.worker_argv);
    }
    first = false;
  }
  report.text = std::move(out);
  return report;
}

FailureReportInput failure_report_input(const SupervisorMachine& machine, bool final) {
  FailureReportInput in;
  in.final = final;
  in.state = machine.state();
  in.attempt = machine.attempt();
  in.stop_signal = machine.stop_signal();
  in.rendezvous_timed_out = machine.rendezvous_timed_out();
  in.hang_detected = machine.hang_detected();
  in.failures = machine.failures();
  in.teardown_began = machine.teardown_began();
  return in;
}

}  // namespace ddp::launcher
