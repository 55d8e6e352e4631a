// launcher/outputs/run_record.hpp's kill_recorded on Linux: process groups, their leaderless members, cgroups.
#include <fmt/ranges.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "launcher/outputs/run_record.hpp"
#include "launcher/workers/cgroup.hpp"

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

std::vector<pid_t> kill_recorded(const RunRecordContent& r) {
  std::vector<pid_t> killed;
  std::vector<pid_t> spared;
  for (const auto& step : plan_sweep(r, proc::read_proc_stat, &spared)) {
    if (step.leader_alive) {
      ::kill(-step.pgid, SIGKILL);
      killed.push_back(step.pgid);
      continue;
    }
    for (pid_t pid : members_to_sweep(step, all_processes())) {
      if (::kill(pid, SIGKILL) == 0) killed.push_back(pid);
    }
  }
  if (!spared.empty()) {
    spdlog::warn(
        "left pid {} alone: the record of a killed supervisor (pid {}) names it, but it is not that run's "
        "worker (another start time, group or user)",
        fmt::join(spared, ", pid "), r.supervisor.pid);
  }
  if (kill_and_remove_run_cgroups(r.cgroups, std::chrono::milliseconds(1000))) {
    nlohmann::json dirs = nlohmann::json::array();
    for (const auto& c : r.cgroups) dirs.push_back(c.string());
    spdlog::warn("killed and removed the cgroups a killed supervisor (pid {}) left: {}", r.supervisor.pid, dirs.dump());
  }
  return killed;
}

}  // namespace ddp::launcher
