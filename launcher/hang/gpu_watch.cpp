#include "launcher/hang/gpu_watch.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <utility>

namespace ddp::launcher {

GpuWatch::GpuWatch(boost::asio::io_context& io, GpuWatchConfig config, std::vector<int> ranks,
                   std::optional<std::string> cuda_visible_devices, SampleFn on_sample, WarnFn on_low)
    : timer_(io),
      config_(config),
      ranks_(std::move(ranks)),
      cuda_visible_devices_(std::move(cuda_visible_devices)),
      on_sample_(std::move(on_sample)),
      on_low_(std::move(on_low)) {}

GpuWatch::~GpuWatch() = default;

void GpuWatch::start() {
  if (std::exchange(started_, true) || stopped_ || config_.interval.count() <= 0) return;
  std::string why_not;
  nvml_ = gpu::Nvml::open(why_not);
  if (!nvml_) {
    spdlog::debug("GPU watch off: {}", why_not);
    return;
  }
  auto devices =
      devices_of_local_ranks(cuda_visible_devices_, static_cast<int>(ranks_.size()), nvml_->count().value_or(0));
  bool any = false;
  for (const auto& d : devices) any = any || d.has_value();
  if (!any) {
    spdlog::debug("GPU watch off: no GPU for any local rank");
    nvml_.reset();
    return;
  }
  failing_.assign(devices.size(), false);
  targets_.emplace(std::move(devices), ranks_, config_);
  t0_ = std::chrono::steady_clock::now();
  spdlog::info("GPU watch: utilisation every {} ms; under {} % for {} s gets a warning", config_.interval.count(),
               config_.low_util_percent, std::chrono::duration_cast<std::chrono::seconds>(config_.low_window).count());
  sample_all();
  arm();
}

void GpuWatch::stop() {
  stopped_ = true;
  timer_.cancel();
}

void GpuWatch::on_round(std::vector<int> ranks) {
  if (targets_) targets_->on_round(ranks);
  ranks_ = std::move(ranks);  // not started yet: start() labels with these
}

void GpuWatch::arm() {
  timer_.expires_after(config_.interval);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (ec || stopped_) return;
    sample_all();
    arm();
  });
}

void GpuWatch::sample_all() {
  auto t = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0_);
  for (const auto& target : targets_->targets()) {
    auto i = static_cast<std::size_t>(target.local_rank);
    std::string why_not;
    auto s = nvml_->sample(target.device, why_not);
    if (!s) {
      if (!failing_[i]) {
        spdlog::warn("GPU watch: cannot sample GPU {} (local rank {}): {}", target.device, target.local_rank, why_not);
      }
      failing_[i] = true;
      continue;
    }
    failing_[i] = false;
    GpuSample sample{target.local_rank, target.rank, target.device, *s};
    on_sample_(sample);
    if (auto w = targets_->on_sample(target.local_rank, t, s->util_percent)) on_low_(sample, w->alert, w->text);
  }
}

}  // namespace ddp::launcher
