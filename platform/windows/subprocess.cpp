// platform/subprocess.hpp on Windows: the helper started like a worker (spawn.hpp: its own Job
// Object, so a timeout ends it and whatever it started), its pipes and its exit waited for on a
// private Asio loop with one deadline.
#include "platform/subprocess.hpp"

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>

#include "platform/child_exits.hpp"
#include "platform/host.hpp"
#include "platform/pipe.hpp"
#include "platform/programs.hpp"
#include "platform/signal_numbers.hpp"
#include "platform/spawn.hpp"

namespace ddp {
namespace {

constexpr std::size_t kMaxOutput = 64 * 1024;

struct Reader {
  Reader(boost::asio::io_context& io, platform::NativeHandle h, std::string& sink) : stream(io, h), into(sink) {}
  void read() {
    stream.async_read_some(boost::asio::buffer(buf), [this](const boost::system::error_code& ec, std::size_t n) {
      if (n && into.size() < kMaxOutput) into.append(buf.data(), std::min(n, kMaxOutput - into.size()));
      if (ec) {
        done = true;
        return;
      }
      read();
    });
  }
  platform::PipeStream stream;
  std::string& into;
  std::array<char, 4096> buf{};
  bool done = false;
};

}  // namespace

CommandRun run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, bool separate_stderr) {
  CommandRun r;
  if (argv.empty()) {
    r.start_error = "no program given";
    return r;
  }
  auto program = platform::find_program(argv[0]);
  if (!program) {
    r.start_error = "not found on PATH";
    return r;
  }
  std::string error;
  auto out = platform::make_output_pipe(error);
  if (!out) {
    r.start_error = "pipe: " + error;
    return r;
  }
  platform::OutputPipe err_pipe;  // kNoHandle ends unless separate_stderr
  if (separate_stderr) {
    auto made = platform::make_output_pipe(error);
    if (!made) {
      platform::close_handle(out->read);
      platform::close_handle(out->write);
      r.start_error = "pipe: " + error;
      return r;
    }
    err_pipe = *made;
  }
  const bool err = separate_stderr;
  SpawnRequest req;
  req.program = *program;
  req.argv = argv;
  for (const auto& [k, v] : platform::environment()) req.env.push_back(k + "=" + v);
  req.stdout_fd = out->write;
  req.stderr_fd = err ? err_pipe.write : out->write;
  req.new_session = false;  // a helper stays in our console group: Ctrl-C reaches it with us
  auto started = spawn_process(req);
  platform::close_handle(out->write);
  platform::close_handle(err_pipe.write);
  if (!started.ok()) {
    platform::close_handle(out->read);
    platform::close_handle(err_pipe.read);
    r.start_error = started.what + ": " + started.error;
    return r;
  }
  r.started = true;

  boost::asio::io_context io(1);
  Reader out_reader(io, out->read, r.output);
  std::unique_ptr<Reader> err_reader;
  if (err) err_reader = std::make_unique<Reader>(io, err_pipe.read, r.errors);
  out_reader.read();
  if (err_reader) err_reader->read();
  bool exited = false;
  platform::ChildExits exits(io, [&](const platform::ChildExit& x) {
    exited = true;
    r.exit_code = x.signal ? -1 : x.exit_code;
    r.signal = x.signal;
  });
  exits.watch(started.child, 0);
  boost::asio::steady_timer deadline(io, timeout);
  deadline.async_wait([&](const boost::system::error_code& ec) {
    if (ec) return;
    r.timed_out = !exited;
    started.child.signal_group(sig::kKill);  // its job: the helper and what it started (holding our pipes)
  });
  // Until it exited and both pipes ended (a grandchild holding a pipe ends with the job).
  while (!(exited && out_reader.done && (!err_reader || err_reader->done))) {
    if (io.run_one() == 0) break;
  }
  deadline.cancel();
  return r;
}

}  // namespace ddp
