#include "launcher/gpu_watch.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

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
  if (config_.interval.count() <= 0) return;
  std::string why_not;
  nvml_ = gpu::Nvml::open(why_not);
  if (!nvml_) {
    spdlog::debug("GPU watch off: {}", why_not);
    return;
  }
  devices_ = devices_of_local_ranks(cuda_visible_devices_, static_cast<int>(ranks_.size()), nvml_->count().value_or(0));
  bool any = false;
  for (const auto& d : devices_) any = any || d.has_value();
  if (!any) {
    spdlog::debug("GPU watch off: no GPU for any local rank");
    nvml_.reset();
    return;
  }
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    detectors_.emplace_back(config_.low_util_percent, config_.low_window);
  }
  failing_.assign(devices_.size(), false);
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
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    if (!devices_[i]) continue;
    std::string why_not;
    auto s = nvml_->sample(*devices_[i], why_not);
    if (!s) {
      if (!failing_[i]) spdlog::warn("GPU watch: cannot sample GPU {} (local rank {}): {}", *devices_[i], i, why_not);
      failing_[i] = true;
      continue;
    }
    failing_[i] = false;
    GpuSample sample{static_cast<int>(i), ranks_[i], *devices_[i], *s};
    on_sample_(sample);
    if (auto alert = detectors_[i].on_sample(t, s->util_percent)) {
      on_low_(sample, *alert, low_util_warning(*devices_[i], ranks_[i], *alert));
    }
  }
}

}  // namespace ddp::launcher
