// launcher/workers/cgroup.hpp's shell in the Windows build: there are no cgroups. Each worker's Job Object
// (platform/spawn.hpp) ends what it started; --memory-limit-per-rank is refused before a launch
// (launcher/run/run_options.cpp), and a kill is never the OOM killer's.
#include "launcher/workers/cgroup.hpp"

namespace ddp::launcher {

WorkerCgroups::WorkerCgroups(std::string_view, std::optional<std::uint64_t>) {}
WorkerCgroups::~WorkerCgroups() = default;
std::vector<std::filesystem::path> WorkerCgroups::dirs() const { return {}; }
std::vector<platform::NativeHandle> WorkerCgroups::prepare_rank(int, int) { return {}; }
void WorkerCgroups::kill_all() {}
void WorkerCgroups::remove_attempts(std::chrono::milliseconds) {}
std::optional<std::string> WorkerCgroups::oom_evidence(int, int) const { return std::nullopt; }

bool kill_and_remove_run_cgroups(const std::vector<std::filesystem::path>&, std::chrono::milliseconds) { return false; }
bool kernel_log_oom_kill(pid_t) { return false; }
std::optional<std::string> oom_kill_evidence(const WorkerCgroups&, int, int, pid_t, int) { return std::nullopt; }

}  // namespace ddp::launcher
