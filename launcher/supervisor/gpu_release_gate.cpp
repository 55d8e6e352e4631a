// GpuReleaseGate: NVML polled on the supervisor's loop until the failed attempt's GPU memory is free
// (launcher/supervisor/gpu_release_gate.hpp).
#include "launcher/supervisor/gpu_release_gate.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <utility>

#include "common/gpu.hpp"
#include "launcher/hang/gpu_watch_core.hpp"

namespace ddp::launcher {
namespace {
constexpr std::chrono::milliseconds kPollEvery{20};
}

GpuReleaseGate::GpuReleaseGate(boost::asio::io_context& io, std::chrono::milliseconds timeout,
                               const std::optional<std::string>& cuda_visible_devices)
    : timer_(io), timeout_(timeout) {
  if (timeout_.count() <= 0) return;
  std::string why_not;
  nvml_ = gpu::Nvml::open(why_not);
  if (!nvml_) {
    spdlog::debug("GPU release gate off: {}", why_not);
    return;
  }
  if (cuda_visible_devices) {
    devices_ = visible_devices(*cuda_visible_devices);
  } else {
    for (int i = 0; i < nvml_->count().value_or(0); ++i) devices_.push_back(std::to_string(i));
  }
  if (devices_.empty()) {
    nvml_.reset();
    return;
  }
  for (const auto& d : sample()) baseline_[d.device] = d.used_bytes;  // the level before the run
}

GpuReleaseGate::~GpuReleaseGate() = default;

std::vector<GpuMemoryNow> GpuReleaseGate::sample() const {
  std::vector<GpuMemoryNow> out;
  for (const auto& d : devices_) {
    std::string why_not;
    if (auto s = nvml_->sample(d, why_not)) out.push_back({d, s->mem_used_bytes, s->compute_pids});
  }
  return out;
}

void GpuReleaseGate::wait(std::vector<unsigned> dead_pids, std::function<void(const Outcome&)> done) {
  if (!nvml_) {
    done(Outcome{});
    return;
  }
  dead_pids_ = std::move(dead_pids);
  done_ = std::move(done);
  started_ = std::chrono::steady_clock::now();
  poll();
}

void GpuReleaseGate::poll() {
  auto v = gpu_release_verdict(sample(), baseline_, dead_pids_);
  const auto waited = std::chrono::steady_clock::now() - started_;
  if (v.released || waited >= timeout_) {
    Outcome o{.gated = true,
              .released = v.released,
              .waited_s = std::chrono::duration<double>(waited).count(),
              .held = std::move(v.held)};
    auto done = std::exchange(done_, {});
    if (done) done(o);
    return;
  }
  timer_.expires_after(kPollEvery);
  timer_.async_wait([this](boost::system::error_code ec) {
    if (!ec) poll();
  });
}

void GpuReleaseGate::cancel() {
  timer_.cancel();
  done_ = {};
}

}  // namespace ddp::launcher
