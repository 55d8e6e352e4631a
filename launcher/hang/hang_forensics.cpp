#include "launcher/hang/hang_forensics.hpp"

#include <fmt/format.h>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

#include "launcher/outputs/log_router.hpp"
#include "platform/child_wait.hpp"
#include "platform/host.hpp"
#include "platform/pipe.hpp"
#include "platform/proc.hpp"
#include "platform/programs.hpp"
#include "platform/signal_numbers.hpp"
#include "platform/spawn.hpp"
#include "platform/stack_dump.hpp"

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace ddp::launcher {

HangForensicsOptions default_hang_forensics_options() {
  HangForensicsOptions o;
  if (auto gdb = platform::find_program("gdb")) o.gdb = *gdb;
  return o;
}

namespace {

constexpr std::size_t kMaxGdbOutput = 4u << 20;
constexpr auto kPollEvery = std::chrono::milliseconds(50);

struct TargetState {
  StackTarget t;
  bool python = false;
  // gdb
  Child gdb;
  std::unique_ptr<platform::PipeStream> gdb_pipe;
  std::vector<char> buf;
  std::string gdb_out;
  bool gdb_eof = false;
  std::string gdb_problem;  // why gdb gave no stack ("" when it did, or did not run)
  // the SIGABRT route
  std::shared_ptr<StreamCapture> capture;
  bool signalled = false;
  std::optional<Clock::time_point> gone_since;
  bool done = false;
  RankStacks stacks;
};

std::vector<std::string> environment_for_gdb() {
  std::vector<std::string> env;
  for (const auto& [name, value] : platform::environment()) {
    if (name != "LC_ALL") env.push_back(name + "=" + value);
  }
  env.emplace_back("LC_ALL=C");  // the parser reads gdb's English
  return env;
}

std::string last_line(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  auto nl = text.rfind('\n');
  return std::string(nl == std::string_view::npos ? text : text.substr(nl + 1)).substr(0, 300);
}

}  // namespace

struct HangForensics::Collection : std::enable_shared_from_this<Collection> {
  Collection(asio::io_context& io_context, const HangForensicsOptions& options, std::filesystem::path stacks_file,
             std::function<void(HangForensicsResult)> on_done)
      : io(io_context),
        opt(options),
        file(std::move(stacks_file)),
        done(std::move(on_done)),
        deadline(io_context),
        poll(io_context) {}

  asio::io_context& io;
  HangForensicsOptions opt;
  std::vector<std::unique_ptr<TargetState>> targets;
  std::filesystem::path file;
  std::function<void(HangForensicsResult)> done;
  asio::steady_timer deadline;
  asio::steady_timer poll;
  Clock::time_point start = Clock::now();
  bool gdb_phase = true;
  bool finished = false;

  void begin();
  bool start_gdb(TargetState& ts);
  void read_gdb(TargetState& ts);
  void on_poll();
  bool poll_gdb(TargetState& ts);
  void stop_gdb(TargetState& ts, const std::string& problem);
  void signal_phase();
  void check_signalled();
  void finish();
  void abandon();
  void build_from_capture(TargetState& ts);
  void arm_poll();
};

void HangForensics::Collection::begin() {
  for (auto& ts : targets) {
    ts->stacks.rank = ts->t.rank;
    ts->stacks.local_rank = ts->t.local_rank;
    ts->stacks.pid = ts->t.pid;
    ts->python = platform::runs_python(ts->t.pid);
    ts->stacks.source = ts->python ? StackSource::Faulthandler : StackSource::SdkHandler;
    if (!ts->python) {
      if (!opt.gdb)
        ts->gdb_problem = "no gdb on PATH (install gdb for native stacks)";
      else
        start_gdb(*ts);
    }
  }
  deadline.expires_after(opt.bound);
  deadline.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec) self->finish();
  });
  arm_poll();
}

void HangForensics::Collection::arm_poll() {
  poll.expires_after(kPollEvery);
  poll.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec && !self->finished) self->on_poll();
  });
}

bool HangForensics::Collection::start_gdb(TargetState& ts) {
  std::string error;
  auto pipe = platform::make_output_pipe(error);
  if (!pipe) {
    ts.gdb_problem = fmt::format("no pipe for gdb: {}", error);
    return false;
  }
  SpawnRequest req;
  req.program = opt.gdb->string();
  req.argv = {"gdb", "-p", std::to_string(ts.t.pid), "-batch", "-nx", "-ex", "thread apply all bt"};
  req.env = environment_for_gdb();
  req.stdout_fd = pipe->write;
  req.stderr_fd = pipe->write;
  auto res = spawn_process(req);
  platform::close_handle(pipe->write);
  if (!res.ok()) {
    platform::close_handle(pipe->read);
    ts.gdb_problem = fmt::format("gdb ({}) could not start: {}: {}", req.program, res.what, res.error);
    return false;
  }
  ts.gdb = std::move(res.child);
  ts.gdb_pipe = std::make_unique<platform::PipeStream>(io, pipe->read);
  ts.buf.resize(16384);
  read_gdb(ts);
  return true;
}

void HangForensics::Collection::read_gdb(TargetState& ts) {
  ts.gdb_pipe->async_read_some(asio::buffer(ts.buf),
                               [self = shared_from_this(), &ts](boost::system::error_code ec, std::size_t n) {
                                 if (ec) {
                                   ts.gdb_eof = true;
                                   return;
                                 }
                                 if (ts.gdb_out.size() < kMaxGdbOutput) ts.gdb_out.append(ts.buf.data(), n);
                                 if (!self->finished) self->read_gdb(ts);
                               });
}

// Whether this target's gdb is still running; when it has ended, its output is judged.
bool HangForensics::Collection::poll_gdb(TargetState& ts) {
  if (!ts.gdb) return false;
  if (!ts.gdb_eof || !platform::reap_child(ts.gdb, false)) {
    if (Clock::now() - start < opt.gdb_timeout) return true;
    stop_gdb(ts, fmt::format("gdb gave no stack within {} ms", opt.gdb_timeout.count()));
    return false;
  }
  ts.gdb = Child();
  ts.gdb_pipe.reset();
  auto threads = parse_gdb(ts.gdb_out);
  if (threads.empty()) {
    ts.gdb_problem = fmt::format("gdb gave no stack: {}", last_line(ts.gdb_out));
    return false;
  }
  ts.stacks.source = StackSource::Gdb;
  ts.stacks.threads = std::move(threads);
  ts.stacks.raw = std::move(ts.gdb_out);
  ts.done = true;
  return false;
}

void HangForensics::Collection::stop_gdb(TargetState& ts, const std::string& problem) {
  if (!ts.gdb) return;
  ts.gdb.signal_group(sig::kKill);         // its own process group (new session)
  platform::continue_process(ts.t.pid);    // a gdb killed while attached may leave its rank stopped
  platform::reap_child(ts.gdb, true);
  ts.gdb = Child();
  ts.gdb_pipe.reset();
  ts.gdb_problem = problem;
}

void HangForensics::Collection::on_poll() {
  if (gdb_phase) {
    bool running = false;
    for (auto& ts : targets) running = poll_gdb(*ts) || running;
    if (!running) {
      gdb_phase = false;
      signal_phase();
      if (finished) return;
    }
  } else {
    check_signalled();
    if (finished) return;
  }
  arm_poll();
}

void HangForensics::Collection::signal_phase() {
  std::vector<TargetState*> to_signal;
  for (auto& ts : targets) {
    if (ts->done) continue;
    // A stopped process cannot run faulthandler's handler: say so, do not wait out the bound.
    if (auto st = proc::stopped(ts->t.pid)) {
      ts->stacks.missing = stopped_rank_text(ts->t.pid, *st);
      ts->done = true;
      continue;
    }
    if (!ts->t.output) {
      ts->stacks.missing = "its stderr is not routed through the supervisor";
      ts->done = true;
      continue;
    }
    ts->capture = capture_stream(ts->t.output->err, [self = shared_from_this()] {
      asio::post(self->io, [self] {
        if (!self->finished && !self->gdb_phase) self->check_signalled();
      });
    });
    if (ts->capture->ended) {
      ts->stacks.missing = "its stderr had closed already";
      ts->done = true;
      continue;
    }
    to_signal.push_back(ts.get());
  }
  // All at once: a rank's death must not change the stacks of those still waiting for it.
  for (auto* ts : to_signal) {
    auto why_not = platform::request_stack_dump(ts->t.pid);
    if (why_not.empty()) {
      ts->signalled = true;
      continue;
    }
    ts->stacks.missing = std::move(why_not);
    ts->done = true;
  }
  check_signalled();
}

void HangForensics::Collection::check_signalled() {
  bool all = true;
  const auto now = Clock::now();
  for (auto& ts : targets) {
    if (ts->done) continue;
    if (ts->capture->ended) {
      ts->done = true;
      continue;
    }
    if (!ts->gone_since && !proc::read_proc_stat(ts->t.pid)) ts->gone_since = now;  // exited (a zombie, or reaped)
    if (ts->gone_since && now - *ts->gone_since >= opt.exit_grace) {
      ts->done = true;
      continue;
    }
    all = false;
  }
  if (all) finish();
}

void HangForensics::Collection::build_from_capture(TargetState& ts) {
  if (!ts.capture) return;
  for (const auto& line : ts.capture->lines) ts.stacks.raw += line + "\n";
  if (ts.t.output && ts.t.output->err.capture == ts.capture) ts.t.output->err.capture = nullptr;
  ts.capture->on_end = nullptr;  // it holds this collection: no cycle left behind
  ts.stacks.threads = parse_stacks(ts.stacks.source, ts.stacks.raw);
  if (!ts.stacks.threads.empty() || !ts.stacks.missing.empty()) return;
  const bool late = !ts.done;
  if (ts.python) {
    ts.stacks.missing =
        late ? fmt::format("no faulthandler traceback on its stderr within {} ms of {}", opt.bound.count(),
                           platform::stack_dump_name())
             : fmt::format("no faulthandler traceback on its stderr after {} (the program turned "
                           "faulthandler off, or PYTHONFAULTHANDLER was set empty)",
                           platform::stack_dump_name());
    return;
  }
  ts.stacks.missing = fmt::format("{}; and no backtrace on its stderr after {} ({})",
                                  ts.gdb_problem.empty() ? "no gdb" : ts.gdb_problem, platform::stack_dump_name(),
                                  platform::native_stack_dump_hint());
}

void HangForensics::Collection::abandon() {
  finished = true;
  deadline.cancel();
  poll.cancel();
  for (auto& ts : targets) {
    stop_gdb(*ts, "abandoned");
    if (!ts->capture) continue;
    if (ts->t.output && ts->t.output->err.capture == ts->capture) ts->t.output->err.capture = nullptr;
    ts->capture->on_end = nullptr;
  }
}

void HangForensics::Collection::finish() {
  if (finished) return;
  finished = true;
  deadline.cancel();
  poll.cancel();
  HangForensicsResult result;
  for (auto& ts : targets) {
    stop_gdb(*ts, fmt::format("gdb gave no stack within the {} ms bound", opt.bound.count()));
    build_from_capture(*ts);
    if (ts->stacks.threads.empty() && ts->stacks.missing.empty()) {
      ts->stacks.missing = ts->gdb_problem.empty() ? "no stack within the bound" : ts->gdb_problem;
    }
    result.ranks.push_back(std::move(ts->stacks));
  }
  result.summary = summarize_stacks(result.ranks, opt.read_line);
  std::error_code ec;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out << stacks_file_text(result.ranks, result.summary);
  out.close();
  if (out)
    result.stacks_file = file;
  else
    result.write_error = fmt::format("cannot write {}: {}", file.string(), std::strerror(errno));
  result.took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  asio::post(io, [done = std::move(done), result = std::move(result)]() mutable { done(std::move(result)); });
}

HangForensics::HangForensics(asio::io_context& io, HangForensicsOptions options)
    : io_(io), options_(std::move(options)) {}

HangForensics::~HangForensics() {
  if (current_ && !current_->finished) current_->abandon();
}

bool HangForensics::busy() const { return current_ && !current_->finished; }

void HangForensics::collect(std::vector<StackTarget> targets, std::filesystem::path stacks_file,
                            std::function<void(HangForensicsResult)> done) {
  if (busy()) {
    HangForensicsResult refused;
    for (const auto& t : targets) {
      refused.ranks.push_back(RankStacks{
          t.rank, t.local_rank, t.pid, StackSource::Faulthandler, {}, "", "another collection is under way"});
    }
    refused.summary = summarize_stacks(refused.ranks, nullptr);
    asio::post(io_, [done = std::move(done), refused = std::move(refused)]() mutable { done(std::move(refused)); });
    return;
  }
  current_ = std::make_shared<Collection>(io_, options_, std::move(stacks_file), std::move(done));
  for (auto& t : targets) {
    auto ts = std::make_unique<TargetState>();
    ts->t = t;
    current_->targets.push_back(std::move(ts));
  }
  current_->begin();
}

}  // namespace ddp::launcher
