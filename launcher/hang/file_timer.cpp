#include "launcher/hang/file_timer.hpp"

#include <fmt/format.h>

#include <climits>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/env_contract.hpp"

namespace ddp::launcher {

using json = nlohmann::json;

FileTimerSetup file_timer_setup(const std::map<std::string, std::string>& env, const std::string& run_dir) {
  FileTimerSetup setup;
  auto enable = env.find(std::string(env::kEnableFileTimer));
  if (enable == env.end()) return setup;
  if (enable->second != "1") {
    setup.warning = fmt::format(
        "{}={} is not 1: the torch elastic file timer stays off (torch's agent also serves it only for "
        "exactly 1); set {}=1 to serve it",
        env::kEnableFileTimer, enable->second, env::kEnableFileTimer);
    return setup;
  }
  setup.enabled = true;
  auto file = env.find(std::string(env::kTimerFile));
  if (file != env.end() && !file->second.empty()) {
    setup.path = file->second;
    setup.path_from_env = true;
  } else {
    setup.path = (std::filesystem::path(run_dir) / kTimerFifoName).string();
  }
  return setup;
}

namespace {

// An integer field within [lo, hi], or an error naming it.
std::optional<long long> int_field(const json& j, const char* name, long long lo, long long hi, std::string& error) {
  auto it = j.find(name);
  if (it == j.end()) {
    error = fmt::format("field \"{}\" is missing", name);
    return std::nullopt;
  }
  if (!it->is_number_integer()) {
    error = fmt::format("field \"{}\" is not an integer", name);
    return std::nullopt;
  }
  // A non-negative number is unsigned in nlohmann::json, and may not fit a long long.
  bool in_range = it->is_number_unsigned() ? it->get<unsigned long long>() <= static_cast<unsigned long long>(hi) &&
                                                 static_cast<long long>(it->get<unsigned long long>()) >= lo
                                           : it->get<long long>() >= lo && it->get<long long>() <= hi;
  if (!in_range) {
    error = fmt::format("field \"{}\" is {}, outside {}..{}", name, it->dump(), lo, hi);
    return std::nullopt;
  }
  return it->get<long long>();
}

}  // namespace

ParsedTimerRequest parse_timer_request(std::string_view line) {
  ParsedTimerRequest out;
  auto j = json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    out.error = "not a JSON object";
    return out;
  }
  std::string error;
  auto pid = int_field(j, "pid", 1, INT_MAX, error);
  if (!pid) {
    out.error = error;
    return out;
  }
  out.pid = static_cast<pid_t>(*pid);
  auto scope = j.find("scope_id");
  if (scope == j.end() || !scope->is_string()) {
    out.error = "field \"scope_id\" is missing or not a string";
    return out;
  }
  auto when = j.find("expiration_time");
  if (when == j.end() || !when->is_number() || !std::isfinite(when->get<double>())) {
    out.error = "field \"expiration_time\" is missing or not a number";
    return out;
  }
  // kill(2) knows signals 1..64; torch treats ≤ 0 as "expire without a signal".
  auto signal = int_field(j, "signal", INT_MIN, 64, error);
  if (!signal) {
    out.error = error;
    return out;
  }
  out.request = FileTimerRequest{static_cast<pid_t>(*pid), scope->get<std::string>(), when->get<double>(),
                                 static_cast<int>(*signal)};
  return out;
}

std::vector<TimerLineSplitter::Line> TimerLineSplitter::feed(std::string_view bytes) {
  std::vector<Line> lines;
  while (!bytes.empty()) {
    auto nl = bytes.find('\n');
    auto chunk = bytes.substr(0, nl);
    bytes = nl == std::string_view::npos ? std::string_view() : bytes.substr(nl + 1);
    if (!skipping_) {
      partial_.append(chunk);
      if (partial_.size() > max_line_) {
        constexpr std::size_t kQuoted = 120;  // enough to recognise it in the log
        lines.push_back({partial_.substr(0, kQuoted), true});
        partial_.clear();
        skipping_ = true;
      } else if (nl != std::string_view::npos) {
        if (!partial_.empty()) lines.push_back({std::move(partial_), false});
        partial_.clear();
      }
    }
    if (nl != std::string_view::npos) skipping_ = false;  // the oversized line ended here
  }
  return lines;
}

bool FileTimerTable::apply(const FileTimerRequest& request, int rank) {
  auto key = std::make_pair(request.pid, request.scope_id);
  auto it = timers_.find(key);
  if (request.release()) {
    if (it != timers_.end()) erase(it);
    return true;
  }
  if (it != timers_.end()) {
    erase(it);  // replaced by the new deadline
  } else if (timers_.size() >= capacity_) {
    return false;
  }
  timers_.emplace(key, Timer{rank, request.expiration_time, request.signal});
  deadlines_.insert(request.expiration_time);
  return true;
}

void FileTimerTable::erase(std::map<std::pair<pid_t, std::string>, Timer>::iterator it) {
  deadlines_.erase(deadlines_.find(it->second.expiration_time));
  timers_.erase(it);
}

std::optional<double> FileTimerTable::earliest() const {
  if (deadlines_.empty()) return std::nullopt;
  return *deadlines_.begin();
}

std::vector<TimerExpiry> FileTimerTable::take_expired(double now) {
  // Per pid: the earliest expired timer with a signal, else the earliest expired one.
  std::map<pid_t, TimerExpiry> chosen;
  for (const auto& [key, t] : timers_) {
    if (t.expiration_time > now) continue;
    TimerExpiry e{key.first, t.rank, key.second, t.expiration_time, t.signal};
    auto [it, fresh] = chosen.emplace(key.first, e);
    if (fresh) continue;
    auto& best = it->second;
    bool better = (e.signal > 0) != (best.signal > 0) ? e.signal > 0 : e.expiration_time < best.expiration_time;
    if (better) best = e;
  }
  std::vector<TimerExpiry> out;
  for (auto& [pid, e] : chosen) {
    forget(pid);
    out.push_back(std::move(e));
  }
  return out;
}

void FileTimerTable::forget(pid_t pid) {
  for (auto it = timers_.lower_bound({pid, std::string()}); it != timers_.end() && it->first.first == pid;) {
    auto next = std::next(it);
    erase(it);
    it = next;
  }
}

void FileTimerTable::clear() {
  timers_.clear();
  deadlines_.clear();
}

std::optional<int> rank_of_pid(pid_t pid, const std::map<pid_t, int>& worker_ranks,
                               const std::function<std::optional<pid_t>(pid_t)>& parent_of, int max_depth) {
  for (int depth = 0; pid > 1 && depth <= max_depth; ++depth) {
    if (auto it = worker_ranks.find(pid); it != worker_ranks.end()) return it->second;
    auto parent = parent_of(pid);
    if (!parent) return std::nullopt;
    pid = *parent;
  }
  return std::nullopt;
}

bool OncePerSender::first(pid_t sender) {
  ++total_;
  if (seen_.count(sender) || seen_.size() >= max_senders_) return false;
  seen_.insert(sender);
  ++logged_;
  return true;
}

}  // namespace ddp::launcher
