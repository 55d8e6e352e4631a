#include "launcher/outputs/log_router.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <utility>

#include "common/fault_injection.hpp"
#include "launcher/outputs/filtered_log_writer.hpp"
#include "launcher/outputs/metrics_recorder.hpp"

namespace asio = boost::asio;

namespace ddp::launcher {

Console::Console() : thread_([this] { loop(); }) {}

Console::~Console() {
  {
    std::lock_guard lock(mu_);
    done_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void Console::drain(std::chrono::milliseconds limit) {
  std::unique_lock lock(mu_);
  idle_.wait_for(lock, limit, [&] { return queue_.empty() && !writing_; });
}

void Console::write(FILE* stream, std::string text) {
  {
    std::lock_guard lock(mu_);
    if (queued_bytes_ + text.size() > kMaxQueued) {
      ++dropped_;
      return;
    }
    queued_bytes_ += text.size();
    queue_.push_back({stream, std::move(text)});
  }
  cv_.notify_one();
}

void Console::loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
    if (queue_.empty() && done_) {
      if (dropped_) std::fprintf(stdout, "[ddp-launch]: console too slow, %zu lines dropped\n", dropped_);
      break;
    }
    Item item = std::move(queue_.front());
    queue_.pop_front();
    queued_bytes_ -= item.text.size();
    std::size_t dropped = std::exchange(dropped_, 0);
    writing_ = true;
    lock.unlock();
    if (dropped) std::fprintf(item.stream, "[ddp-launch]: console too slow, %zu lines dropped\n", dropped);
    std::fwrite(item.text.data(), 1, item.text.size(), item.stream);
    std::fflush(item.stream);
    lock.lock();
    writing_ = false;
    if (queue_.empty()) idle_.notify_all();
  }
}

std::shared_ptr<StreamCapture> capture_stream(RankStream& s, std::function<void()> on_end) {
  auto c = std::make_shared<StreamCapture>();
  c->on_end = std::move(on_end);
  c->ended = !s.open;
  s.capture = c;
  return c;
}

namespace {

void end_capture(RankStream& s) {
  if (!s.capture || s.capture->ended) return;
  auto c = std::exchange(s.capture, nullptr);
  c->ended = true;
  if (c->on_end) c->on_end();
}

void capture_line(RankStream& s, const std::string& line) {
  auto& c = *s.capture;
  if (c.ended) return;
  if (c.bytes + line.size() > StreamCapture::kMaxBytes) {
    ++c.dropped;
    return;
  }
  c.bytes += line.size();
  c.lines.push_back(line);
}

}  // namespace

void RankOutput::stop_reading() {
  boost::system::error_code ec;
  out.pipe.close(ec);
  err.pipe.close(ec);
}

LogRouter::LogRouter(asio::io_context& io, Console& console, FileWriter& files, MetricsRecorder& metrics,
                     FilteredLogWriter& filtered, std::function<void()> on_stream_end)
    : io_(io),
      console_(console),
      files_(files),
      metrics_(metrics),
      filtered_(filtered),
      on_stream_end_(std::move(on_stream_end)),
      slow_reads_(fault_armed(kFaultSlowPipeReads)) {
  if (slow_reads_)
    spdlog::warn("fault injection: {} armed: worker output is read 200 ms late (tests only)", kFaultSlowPipeReads);
}

void LogRouter::start(RankOutput& r, platform::NativeHandle stdout_fd, platform::NativeHandle stderr_fd,
                      const RankRouting& routing, const std::filesystem::path& dir) {
  for (auto [s, route, name] :
       {std::tuple{&r.out, routing.out, "stdout.log"}, std::tuple{&r.err, routing.err, "stderr.log"}}) {
    s->console = route.console;
    if (route.file) s->file = files_.open(dir / name, FileWriter::Mode::Truncate);
  }
  r.out.pipe.assign(stdout_fd);
  r.err.pipe.assign(stderr_fd);
  read(r, r.out, stdout);
  read(r, r.err, stderr);
}

void LogRouter::read(RankOutput& r, RankStream& s, FILE* console) {
  s.pipe.async_read_some(asio::buffer(s.buf), [this, &r, &s, console](boost::system::error_code ec, std::size_t n) {
    if constexpr (kFaultInjectionBuilt) {
      if (slow_reads_) {
        auto late = std::make_shared<asio::steady_timer>(io_, std::chrono::milliseconds(200));
        late->async_wait(
            [this, late, &r, &s, console, ec, n](boost::system::error_code) { on_read_done(r, s, console, ec, n); });
        return;
      }
    }
    on_read_done(r, s, console, ec, n);
  });
}

void LogRouter::on_read_done(RankOutput& r, RankStream& s, FILE* console, boost::system::error_code ec, std::size_t n) {
  if (!ec) {
    on_read(r, s, console, n);
    return;
  }
  if (auto last = s.lines.finish()) on_line(r, s, console, std::move(*last));
  if (s.file) files_.close(*std::exchange(s.file, std::nullopt));
  s.open = false;
  end_capture(s);
  on_stream_end_();
}

void LogRouter::on_read(RankOutput& r, RankStream& s, FILE* console, std::size_t n) {
  // The file gets the worker's bytes exactly (long lines, binary, a last line without newline).
  if (s.file) files_.write(*s.file, std::string(s.buf.data(), n), false);
  for (auto& line : s.lines.feed(std::string_view(s.buf.data(), n))) on_line(r, s, console, std::move(line));
  if (n > 0 && output_hook_) output_hook_(r);
  if (!s.file || !files_.backlogged()) {
    read(r, s, console);
    return;
  }
  // The disk is behind: this rank waits for it (its pipe fills), the loop does not.
  files_.when_below_bound(
      [this, &r, &s, console] { asio::post(io_, [this, &r, &s, console] { read(r, s, console); }); });
}

void LogRouter::on_line(RankOutput& r, RankStream& s, FILE* console, std::string line) {
  const bool is_stderr = &s == &r.err;
  if (s.capture) capture_line(s, line);
  if (is_stderr) {
    r.last_stderr.push_back(line);
    if (r.last_stderr.size() > RankOutput::kLastStderrLines) r.last_stderr.pop_front();
  }
  r.last_output.push_back(line);
  if (r.last_output.size() > RankOutput::kLastOutputLines) r.last_output.pop_front();
  metrics_.on_line(r.attempt, r.rank, line);
  filtered_.on_line(r.attempt, is_stderr, r.prefix, line);
  if (s.console) console_.write(console, fmt::format("{}{}\n", r.prefix, line));
}

}  // namespace ddp::launcher
