#pragma once
// The live stream's definition (live_stream.hpp): included by the files that instantiate
// start_live_stream for their socket type, live_stream.cpp for TCP and api_server_unix.cpp for the
// unix socket (a build whose Asio has no local sockets never names that type).
#include <spdlog/spdlog.h>

#include <array>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <functional>
#include <memory>
#include <optional>

#include "common/clock.hpp"
#include "jobs/dashboard/harden.hpp"
#include "jobs/dashboard/live_plan.hpp"
#include "jobs/dashboard/live_stream.hpp"
#include "jobs/dashboard/pages.hpp"
#include "jobs/dashboard/sse.hpp"
#include "jobs/log_follower.hpp"
#include "platform/host.hpp"

namespace ddp::jobs::dashboard {

namespace live_detail {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

inline constexpr std::size_t kLogChunk = 64 * 1024;  // log bytes in one message
inline constexpr std::size_t kLogTail = 64 * 1024;   // what a new stream shows of the log
inline constexpr std::size_t kTimelineRows = 500;    // transitions and events in one message, of each
inline constexpr std::size_t kListedJobs = 200;      // the job list: the newest
inline constexpr std::size_t kChartPoints = 2000;    // a series' points in the chart
inline constexpr auto kRetry = std::chrono::milliseconds(3000);

inline std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

template <class Socket>
class LiveStream : public std::enable_shared_from_this<LiveStream<Socket>> {
 public:
  LiveStream(Socket socket, JobManager& jobs, MetricsCache& metrics, LiveView view, TcpSlot slot, StillAllowed allowed)
      : socket_(std::move(socket)),
        jobs_(jobs),
        metrics_(metrics),
        view_(std::move(view)),
        slot_(std::move(slot)),
        allowed_(std::move(allowed)),
        plan_(LiveTimings{}, Clock::now()),
        wake_(socket_.get_executor()),
        stall_(socket_.get_executor()) {}

  void start() {
    auto res = std::make_shared<http::response<http::empty_body>>(http::status::ok, 11);
    res->set(http::field::content_type, "text/event-stream; charset=utf-8");
    res->set(http::field::server, "ddp-launch");
    res->set("X-Accel-Buffering", "no");  // a reverse proxy in front must not hold the messages back
    harden(*res);                         // the security headers, no-store
    res->keep_alive(false);               // the body ends when the connection does
    auto sr = std::make_shared<http::response_serializer<http::empty_body>>(*res);
    arm_stall();
    http::async_write_header(socket_, *sr, [self = this->shared_from_this(), res, sr](auto ec, std::size_t) {
      self->stall_.cancel();
      if (ec) return self->close();
      self->subscribe();
    });
  }

 private:
  void subscribe() {
    std::weak_ptr<LiveStream> weak = this->shared_from_this();
    watcher_ = jobs_.watch_changes([weak](JobId id) {
      if (auto s = weak.lock()) s->on_change(id);
    });
    const auto now = Clock::now();
    if (view_.kind == LiveView::Kind::Job) {
      log_.emplace(jobs_, view_.job, view_.rank, view_.stream, [weak] {
        if (auto s = weak.lock()) s->on_log_growth();
      });
      log_->start_at_tail(kLogTail);
      for (auto t : {Topic::Job, Topic::Timeline, Topic::Log, Topic::Metrics}) plan_.backlog(t, now);
    } else {
      if (view_.kind == LiveView::Kind::Jobs) plan_.backlog(Topic::Jobs, now);
      plan_.backlog(Topic::Host, now);
    }
    frame_ =
        sse_retry(kRetry) +
        sse_message("hello",
                    dump({{"now", now_seconds()}, {"host", platform::host_name()}, {"pid", platform::current_pid()}}));
    watch_peer();
    write();
  }

  void on_change(JobId id) {
    const auto now = Clock::now();
    if (view_.kind != LiveView::Kind::Job) {
      if (view_.kind == LiveView::Kind::Jobs) plan_.mark(Topic::Jobs, now);
      plan_.mark(Topic::Host, now);
    } else if (id == view_.job) {
      plan_.mark(Topic::Job, now);
      plan_.mark(Topic::Timeline, now);
      plan_.mark(Topic::Log, now);  // a restart may have a new file to follow
      plan_.mark(Topic::Metrics, now);
    } else {
      return;
    }
    schedule();
  }

  void on_log_growth() {
    const auto now = Clock::now();
    plan_.mark(Topic::Log, now);
    plan_.mark(Topic::Metrics, now);  // the rank's metric lines are in its output
    schedule();
  }

  // A metrics.csv the supervisor writes as its ranks print metric lines (any rank, not only the one
  // whose log is shown): the chart's other trigger.
  void watch_metrics_file() {
    auto dir = jobs_.views().run_dir(view_.job);
    if (dir.empty() || dir == metrics_dir_) return;
    if (metrics_watch_) jobs_.file_watch().unwatch(*metrics_watch_);
    std::weak_ptr<LiveStream> weak = this->shared_from_this();
    metrics_watch_ = jobs_.file_watch().watch(std::filesystem::path(dir) / "metrics.csv", [weak] {
      if (auto s = weak.lock()) {
        s->plan_.mark(Topic::Metrics, Clock::now());
        s->schedule();
      }
    });
    if (metrics_watch_) metrics_dir_ = dir;  // else: not linked yet (before `started`); tried again
  }

  void schedule() {
    if (writing_ || closed_) return;
    auto due = plan_.next_due();
    if (armed_ && *armed_ <= due) return;
    armed_ = due;
    wake_.expires_at(due);
    wake_.async_wait([weak = this->weak_from_this()](boost::system::error_code ec) {
      if (ec) return;  // re-armed or closed
      if (auto s = weak.lock()) {
        s->armed_.reset();
        s->compose();
      }
    });
  }

  void compose() {
    if (writing_ || closed_) return;
    const auto now = Clock::now();
    if (allowed_ && !allowed_(now)) return close();  // logged out: not one more message
    auto batch = plan_.take(now);
    frame_.clear();
    try {
      if (batch.has(Topic::Jobs)) add_if_changed("jobs", jobs_.views().list_text(view_.state, kListedJobs), sent_jobs_);
      if (batch.has(Topic::Host)) add_if_changed("host", dump(jobs_.views().host()), sent_host_);
      if (batch.has(Topic::Job)) {
        add_if_changed("job", jobs_.views().get_text(view_.job), sent_job_);
        watch_metrics_file();
      }
      if (batch.has(Topic::Timeline)) add_timeline(now);
      if (batch.has(Topic::Log)) add_log(now);
      if (batch.has(Topic::Metrics)) add_if_changed("metrics", metrics_.frame(view_.job, now), sent_metrics_);
    } catch (const std::exception& e) {  // a view that cannot be read now: say so, keep the stream
      spdlog::warn("dashboard: live stream: {}", e.what());
      frame_ += sse_message("problem", dump({{"error", e.what()}}));
    }
    if (frame_.empty() && batch.heartbeat) frame_ = sse_comment("keep-alive");
    if (frame_.empty()) return schedule();
    write();
  }

  // A topic whose text did not change since it was last sent (the list after a job's GPU sample) is
  // not sent again.
  void add_if_changed(std::string_view event, std::string_view text, std::size_t& sent) {
    while (!text.empty() && text.back() == '\n') text.remove_suffix(1);  // the API's texts end in a newline
    auto h = std::hash<std::string_view>{}(text);
    if (h == sent) return;
    sent = h;
    frame_ += sse_message(event, text);
  }

  void add_timeline(TimePoint now) {
    auto rows = jobs_.views().timeline_since(view_.job, cursor_, kTimelineRows);
    auto n_t = rows["transitions"].size(), n_e = rows["events"].size();
    if (n_t == kTimelineRows || n_e == kTimelineRows) plan_.backlog(Topic::Timeline, now);
    if (n_t + n_e > 0) frame_ += sse_message("timeline", dump(rows));
  }

  void add_log(TimePoint now) {
    auto fresh = log_->next(kLogChunk);
    // Read on until the file has nothing more, as `logs -f` does: more may be waiting, and only at
    // its end does the follower look for a restart's newer file.
    if (!fresh.empty()) plan_.backlog(Topic::Log, now);
    std::string raw = carry_ + fresh;
    auto shown = terminal_text(raw);
    std::string& chunk = shown.text;
    auto whole = utf8_complete_prefix(chunk);
    // Both wait for the next chunk: the end of a UTF-8 character (never changed by terminal_text),
    // then an unfinished control sequence.
    carry_ = chunk.substr(whole) + raw.substr(shown.consumed);
    chunk.resize(whole);
    if (chunk.empty() && !first_log_) return;
    frame_ += sse_message("log", dump({{"text", chunk}, {"reset", first_log_}}));
    first_log_ = false;
  }

  void write() {
    writing_ = true;
    arm_stall();
    asio::async_write(socket_, asio::buffer(frame_),
                      [self = this->shared_from_this()](boost::system::error_code ec, std::size_t) {
                        self->writing_ = false;
                        self->stall_.cancel();
                        if (ec) return self->close();
                        self->frame_.clear();
                        self->frame_.shrink_to_fit();  // an idle stream holds no message
                        self->schedule();
                      });
  }

  void arm_stall() {
    stall_.expires_after(kWriteDeadline);
    stall_.async_wait([weak = this->weak_from_this()](boost::system::error_code ec) {
      if (ec) return;
      if (auto s = weak.lock()) {
        spdlog::info("dashboard: closing a live stream whose reader took nothing for {} s", kWriteDeadline.count());
        s->close();
      }
    });
  }

  // An EventSource sends nothing after its request: a read ends only when the peer hangs up.
  void watch_peer() {
    socket_.async_read_some(asio::buffer(discard_), [self = this->shared_from_this()](auto ec, std::size_t) {
      if (ec) return self->close();
      self->watch_peer();
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    if (watcher_) jobs_.unwatch_changes(*watcher_);
    if (log_) log_->close();
    if (metrics_watch_) jobs_.file_watch().unwatch(*metrics_watch_);
    wake_.cancel();
    stall_.cancel();
    boost::system::error_code ec;
    socket_.shutdown(Socket::shutdown_both, ec);
    socket_.close(ec);
  }

  Socket socket_;
  JobManager& jobs_;
  MetricsCache& metrics_;
  LiveView view_;
  TcpSlot slot_;
  StillAllowed allowed_;
  LivePlan plan_;
  asio::steady_timer wake_, stall_;
  std::optional<TimePoint> armed_;
  std::optional<int> watcher_, metrics_watch_;
  std::string metrics_dir_;
  std::optional<LogFollower> log_;
  JobViews::TimelineCursor cursor_;
  std::string frame_, carry_;
  std::size_t sent_jobs_ = 0, sent_host_ = 0, sent_job_ = 0, sent_metrics_ = 0;
  bool writing_ = false, closed_ = false, first_log_ = true;
  std::array<char, 64> discard_{};
};

}  // namespace live_detail

template <class Socket>
void start_live_stream(Socket socket, JobManager& jobs, MetricsCache& metrics, const LiveView& view, TcpSlot slot,
                       StillAllowed allowed) {
  std::make_shared<live_detail::LiveStream<Socket>>(std::move(socket), jobs, metrics, view, std::move(slot),
                                                    std::move(allowed))
      ->start();
}

}  // namespace ddp::jobs::dashboard
