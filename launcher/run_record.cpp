// The run record's shell: reading and writing processes.json, killing what a predecessor left.
#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "common/error.hpp"
#include "launcher/cgroup.hpp"
#include "launcher/run_record.hpp"

namespace fs = std::filesystem;

namespace ddp::launcher {
namespace {

std::vector<std::pair<pid_t, proc::ProcStat>> all_processes() {
  std::vector<std::pair<pid_t, proc::ProcStat>> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", fs::directory_options::skip_permission_denied, ec)) {
    const auto name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    auto pid = static_cast<pid_t>(std::stol(name));
    if (auto st = proc::read_proc_stat(pid)) out.emplace_back(pid, *st);
  }
  return out;
}

}  // namespace

RecordedProcess recorded_process(pid_t pid) {
  auto st = proc::read_proc_stat(pid);
  RecordedProcess p;
  p.pid = pid;
  p.pgid = st ? st->pgid : 0;
  p.start_time = st ? st->start_time : 0;
  return p;
}

void RunRecord::sweep_predecessors(const std::function<void(const SweptPredecessor&)>& swept) {
  for (const auto& record : predecessor_records(paths_)) {
    if (auto s = sweep(record)) swept(*s);
  }
}

std::optional<SweptPredecessor> RunRecord::sweep(const fs::path& record) {
  std::ifstream in(record);
  if (!in) return std::nullopt;
  RunRecordContent r;
  try {
    std::stringstream text;
    text << in.rdbuf();
    r = parse_run_record(text.str());
  } catch (const std::exception& e) {
    spdlog::warn("ignoring unreadable {}: {}", record.string(), e.what());
    return std::nullopt;
  }
  const pid_t sup = r.supervisor.pid;
  switch (record_owner(r, ::getpid(), paths_, proc::read_proc_stat)) {
    case RecordOwner::Gone: break;
    case RecordOwner::SiblingRun: return std::nullopt;
    case RecordOwner::SharedRunId:
      spdlog::warn(
          "another supervisor (pid {}) runs with this run id; this one records its processes nowhere "
          "(a successor cannot sweep what a SIGKILL leaves)",
          sup);
      disabled_ = true;
      return std::nullopt;
    case RecordOwner::Conflict:
      throw Error(
          fmt::format("{} belongs to a running supervisor, pid {}: stop it, or give this run another "
                      "--run-dir (or --rdzv-id)",
                      record.string(), sup));
  }
  std::vector<pid_t> killed;
  for (const auto& step : plan_sweep(r, proc::read_proc_stat)) {
    if (step.leader_alive) {
      ::kill(-step.pgid, SIGKILL);
      killed.push_back(step.pgid);
      continue;
    }
    for (pid_t pid : members_to_sweep(step, all_processes())) {
      if (::kill(pid, SIGKILL) == 0) killed.push_back(pid);
    }
  }
  if (kill_and_remove_run_cgroups(r.cgroups, std::chrono::milliseconds(1000))) {
    nlohmann::json dirs = nlohmann::json::array();
    for (const auto& c : r.cgroups) dirs.push_back(c.string());
    spdlog::warn("killed and removed the cgroups a killed supervisor (pid {}) left: {}", sup, dirs.dump());
  }
  std::error_code ec;
  fs::remove(record, ec);
  if (killed.empty()) return std::nullopt;
  std::string pids;
  for (pid_t p : killed) pids += (pids.empty() ? "" : " ") + std::to_string(p);
  spdlog::warn("swept {} process(es) a killed supervisor (pid {}) left behind (per {}): {}", killed.size(), sup,
               record.string(), pids);
  return SweptPredecessor{sup, killed};
}

void RunRecord::write(const RunRecordContent& content) const {
  if (disabled_) return;
  const auto path = paths_.record();
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  auto tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp);
    out << run_record_text(content) << '\n';
    if (!out) {
      spdlog::warn("cannot write {}: a successor will not be able to sweep what a SIGKILL leaves", tmp.string());
      return;
    }
  }
  fs::rename(tmp, path, ec);
}

void RunRecord::remove() const {
  std::error_code ec;
  if (!disabled_) fs::remove(paths_.record(), ec);
}

}  // namespace ddp::launcher
