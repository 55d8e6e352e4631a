#include "launcher/hang/gpu_watch_core.hpp"

#include <fmt/format.h>

#include <cmath>

namespace ddp::launcher {

std::vector<std::optional<std::string>> devices_of_local_ranks(const std::optional<std::string>& cuda_visible_devices,
                                                               int nproc, int device_count) {
  std::vector<std::optional<std::string>> out(static_cast<std::size_t>(std::max(0, nproc)));
  if (!cuda_visible_devices) {
    for (int i = 0; i < nproc && i < device_count; ++i) out[static_cast<std::size_t>(i)] = std::to_string(i);
    return out;
  }
  const auto visible = visible_devices(*cuda_visible_devices);
  for (std::size_t i = 0; i < out.size() && i < visible.size(); ++i) out[i] = visible[i];
  return out;
}

std::vector<std::string> visible_devices(std::string_view list) {
  std::vector<std::string> visible;
  while (true) {
    auto comma = list.find(',');
    std::string_view entry = list.substr(0, comma);
    while (!entry.empty() && entry.front() == ' ') entry.remove_prefix(1);
    while (!entry.empty() && entry.back() == ' ') entry.remove_suffix(1);
    if (entry.empty() || entry == "-1") break;  // CUDA ignores everything from an invalid entry on
    visible.emplace_back(entry);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return visible;
}

std::optional<LowUtilAlert> LowUtilDetector::on_sample(std::chrono::milliseconds t, unsigned util_percent) {
  if (alerted_) return std::nullopt;
  if (util_percent >= threshold_) {
    restart_window();
    return std::nullopt;
  }
  if (!low_since_) low_since_ = t;
  sum_ += util_percent;
  ++samples_;
  if (t - *low_since_ < window_) return std::nullopt;
  alerted_ = true;
  return LowUtilAlert{sum_ / samples_, t - *low_since_};
}

void LowUtilDetector::restart_window() {
  low_since_.reset();
  sum_ = 0;
  samples_ = 0;
}

std::string low_util_warning(const std::string& device, int rank, const LowUtilAlert& alert) {
  auto seconds = std::chrono::duration<double>(alert.lasted).count();
  return fmt::format(
      "GPU {} (rank {}) at {:.0f} % for {:.0f} s: raise the per-rank batch (--per-rank-batch) or DataLoader "
      "workers (num_workers), or check that the rank waits on nothing else",
      device, rank, std::round(alert.mean_util), seconds);
}

GpuRankTargets::GpuRankTargets(std::vector<std::optional<std::string>> devices, std::vector<int> ranks,
                               GpuWatchConfig config)
    : devices_(std::move(devices)), ranks_(std::move(ranks)), config_(config) {
  detectors_.assign(devices_.size(), LowUtilDetector(config_.low_util_percent, config_.low_window));
}

void GpuRankTargets::on_round(std::vector<int> ranks) {
  ranks_ = std::move(ranks);
  for (auto& d : detectors_) d.restart_window();
}

GpuRankTargets::Target GpuRankTargets::target(std::size_t i) const {
  // A local rank the plan does not cover (it never should) is labelled by its local rank.
  return {static_cast<int>(i), i < ranks_.size() ? ranks_[i] : static_cast<int>(i), devices_[i].value_or("")};
}

std::vector<GpuRankTargets::Target> GpuRankTargets::targets() const {
  std::vector<Target> out;
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (devices_[i]) out.push_back(target(i));
  }
  return out;
}

std::optional<GpuRankTargets::Warning> GpuRankTargets::on_sample(int local, std::chrono::milliseconds t,
                                                                 unsigned util_percent) {
  auto i = static_cast<std::size_t>(local);
  if (local < 0 || i >= devices_.size() || !devices_[i]) return std::nullopt;
  auto alert = detectors_[i].on_sample(t, util_percent);
  if (!alert) return std::nullopt;
  auto labelled = target(i);
  return Warning{labelled, *alert, low_util_warning(labelled.device, labelled.rank, *alert)};
}

}  // namespace ddp::launcher
