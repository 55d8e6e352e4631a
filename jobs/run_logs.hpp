#pragma once
// Where a job run's supervisor writes its per-rank files. The daemon starts it with
// `--log-dir <run>/logs`, which holds torchrun's layout:
//   <run>/logs/<run_id>_<random>/attempt_<k>/<local_rank>/{stdout,stderr}.log
//   <run>/logs/<run_id>_<random>/processes.json      (while the supervisor lives)
//   <run>/logs/<run_id>_<random>/{metrics.csv,run.json}  (linked from <run>/)
// and <run>/supervisor.log, the supervisor's own output.
#include <filesystem>
#include <map>
#include <optional>
#include <string>

namespace ddp::jobs {

// <run>/logs/<run_id>_<random>: the newest, should an interrupted start have left another.
std::optional<std::filesystem::path> supervisor_log_dir(const std::filesystem::path& run_dir);

// The highest attempt_<k> of that directory; nullopt before the first attempt.
std::optional<std::filesystem::path> latest_attempt_dir(const std::filesystem::path& run_dir);

// `rank`'s "stdout"/"stderr" file in the latest attempt ("supervisor": supervisor.log); nullopt
// while it does not exist.
std::optional<std::filesystem::path> rank_log_path(const std::filesystem::path& run_dir, const std::string& rank,
                                                   const std::string& stream);

// Links <run>/metrics.csv and <run>/run.json to the supervisor's own (in its directory under
// <run>/logs, named by its `started` event), so that `ddp-launch report <run>` charts the job.
// Relative links: they hold when the state directory moves. False (logged) when one cannot be made.
bool link_run_records(const std::filesystem::path& run_dir, const std::filesystem::path& supervisor_run_dir);

// Every rank's stdout.log in the latest attempt, by rank; empty before the first attempt.
std::map<int, std::filesystem::path> rank_stdout_files(const std::filesystem::path& run_dir);

// The last max_bytes of a file (all of it when smaller); empty when it cannot be read.
std::string read_file_tail(const std::filesystem::path& p, std::size_t max_bytes);

}  // namespace ddp::jobs
