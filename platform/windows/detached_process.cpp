// platform/detached_process.hpp on Windows: not yet. The job daemon runs on Linux only for now
// (issue 27); the Windows build compiles this half so that platform/ is whole.
#include "platform/detached_process.hpp"

namespace ddp::platform {

pid_t spawn_detached(const DetachedSpawn&, std::string& error) {
  error = "the job daemon's local executor is not on Windows yet (issue 27): run the job with `ddp-launch run`";
  return 0;
}

std::optional<ProcessEnd> reap_child(pid_t) { return std::nullopt; }

struct ProcessWatch::Impl {};

ProcessWatch::ProcessWatch(boost::asio::io_context&, pid_t) : impl_(std::make_unique<Impl>()) {}
ProcessWatch::~ProcessWatch() = default;
bool ProcessWatch::open() const { return false; }
void ProcessWatch::async_wait(std::function<void()>) {}
bool ProcessWatch::signal(int) { return false; }
void ProcessWatch::close() {}

bool signal_process(pid_t, int) { return false; }

}  // namespace ddp::platform
