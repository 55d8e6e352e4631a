#pragma once
// The supervisor's event stream (`ddp-launch run --events FILE`, the daemon's events.jsonl): one
// JSON object a line. The one contract between its writer (the supervisor) and its readers (the
// daemon, tests, benchmarks): a struct per event, their JSON in events.cpp and nowhere else,
// described for other languages by docs/events.schema.json (what each means: docs/events.md).
//
// Every line carries "event" (the type), "time" (seconds since the epoch) and "v" (the schema
// version, kSchemaVersion). The version rule: adding an event type or a field keeps the version;
// renaming or removing a field, or changing its meaning or type, bumps it. Readers therefore
// ignore fields they do not know, and keep an event type they do not know as `Unknown` (a newer
// writer never breaks an older reader). Lines without "v" (supervisors before the contract) read
// as version 1: their fields are the same.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/exit_status.hpp"

namespace ddp::events {

inline constexpr int kSchemaVersion = 1;

// Each struct: kType (the "event" value) and `fields`, which names every JSON field once for both
// directions (events.cpp). std::optional fields are written as null when empty. `field.added`: a
// field added to the event after supervisors had written it without: always written, and read with
// its default when an older line lacks it (every field added from now on is declared so).
#define DDP_EVENT_FIELDS(...)                 \
  template <class Self, class F>              \
  static void fields(Self& self, F&& field) { \
    __VA_ARGS__                               \
  }

struct Started {
  static constexpr std::string_view kType = "started";
  std::string run_id;
  int world_size = 0, nproc = 0, node_rank = 0;
  std::string store;      // agent | rank0 | file
  std::string filestore;  // the FileStore path ("" unless --store file)
  std::string master_addr;
  int master_port = 0;
  int supervisor_pid = 0;
  std::string run_dir;
  std::optional<std::string> log_dir, cgroup;
  bool memory_cgroup = false;
  bool operator==(const Started&) const = default;
  DDP_EVENT_FIELDS(field("run_id", self.run_id); field("world_size", self.world_size); field("nproc", self.nproc);
                   field("node_rank", self.node_rank); field("store", self.store);
                   field.added("filestore", self.filestore); field("master_addr", self.master_addr);
                   field("master_port", self.master_port); field("supervisor_pid", self.supervisor_pid);
                   field.added("run_dir", self.run_dir); field.added("log_dir", self.log_dir);
                   field.added("cgroup", self.cgroup); field.added("memory_cgroup", self.memory_cgroup);)
};

struct SweptPredecessor {
  static constexpr std::string_view kType = "swept_predecessor";
  int supervisor_pid = 0;
  std::vector<int> pids;
  bool operator==(const SweptPredecessor&) const = default;
  DDP_EVENT_FIELDS(field("supervisor_pid", self.supervisor_pid); field("pids", self.pids);)
};

struct RoundEnded {
  static constexpr std::string_view kType = "round_ended";
  int round = 0;
  std::string reason;
  bool operator==(const RoundEnded&) const = default;
  DDP_EVENT_FIELDS(field("round", self.round); field("reason", self.reason);)
};

struct RendezvousClosed {
  static constexpr std::string_view kType = "rendezvous_closed";
  int round = 0;
  std::string reason;
  bool operator==(const RendezvousClosed&) const = default;
  DDP_EVENT_FIELDS(field("round", self.round); field("reason", self.reason);)
};

struct NodeLost {
  static constexpr std::string_view kType = "node_lost";
  std::string host;
  std::int64_t silent_ms = 0;
  std::string reason;  // why it counts as dead: no heartbeat, or its store connection closed and stayed closed
  bool operator==(const NodeLost&) const = default;
  DDP_EVENT_FIELDS(field("host", self.host); field("silent_ms", self.silent_ms); field.added("reason", self.reason);)
};

// Two shapes: a static launch's workers reached the store (attempt set), or a dynamic
// rendezvous round closed (round and node_rank set). An empty optional is not written at all.
struct RendezvousComplete {
  static constexpr std::string_view kType = "rendezvous_complete";
  std::optional<int> attempt, round, node_rank;
  int world_size = 0, nodes = 0;
  bool operator==(const RendezvousComplete&) const = default;
  DDP_EVENT_FIELDS(field.omit_empty("attempt", self.attempt); field.omit_empty("round", self.round);
                   field.omit_empty("node_rank", self.node_rank); field("world_size", self.world_size);
                   field("nodes", self.nodes);)
};

struct FilestoreCleaned {
  static constexpr std::string_view kType = "filestore_cleaned";
  std::string path;
  bool operator==(const FilestoreCleaned&) const = default;
  DDP_EVENT_FIELDS(field("path", self.path);)
};

// The ranks of a failed attempt used a FileStore file their own script names
// (launcher/supervisor/filestore_watch.hpp), and the supervisor judged it.
struct FilestoreFound {
  static constexpr std::string_view kType = "filestore_found";
  int attempt = 0;
  std::string path;
  std::string verdict;          // stale | in_use | unsure
  std::optional<double> age_s;  // last written this long before the run started
  bool removed = false;         // removed before the restart
  std::string text;             // the summary's paragraph
  bool operator==(const FilestoreFound&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("path", self.path); field("verdict", self.verdict);
                   field("age_s", self.age_s); field("removed", self.removed); field("text", self.text);)
};

struct RankStarted {
  static constexpr std::string_view kType = "rank_started";
  int attempt = 0, rank = 0, local_rank = 0, pid = 0;
  bool operator==(const RankStarted&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("rank", self.rank); field("local_rank", self.local_rank);
                   field("pid", self.pid);)
};

struct RankExited {
  static constexpr std::string_view kType = "rank_exited";
  int attempt = 0, rank = 0, local_rank = 0, pid = 0;
  ExitStatus status;  // "exit_code" and "signal"
  bool oom = false;   // a SIGKILL the OOM killer sent
  bool operator==(const RankExited&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("rank", self.rank); field("local_rank", self.local_rank);
                   field("pid", self.pid); field.exit(self.status); field.added("oom", self.oom);)
};

struct GroupStopping {
  static constexpr std::string_view kType = "group_stopping";
  int attempt = 0;
  std::string signal;  // the signal sent to the group, "SIGTERM"
  bool operator==(const GroupStopping&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("signal", self.signal);)
};

// The restart budget's decision (launcher/rendezvous/restart_budget.hpp): whether the failed attempt
// made progress (its checkpoint file's iteration or step), what is left of --max-restarts.
struct Restarting {
  static constexpr std::string_view kType = "restarting";
  int attempt = 0, failed_attempt = 0;
  bool progress = false;                     // the failed attempt advanced the checkpoint / step
  std::optional<std::int64_t> checkpoint{};  // the iteration it reached (--checkpoint-file)
  std::optional<double> step{};              // the highest step it reported
  int no_progress_restarts = 0;              // failures without progress in a row, this one included
  std::optional<int> restarts_left{};        // under --max-restarts; null: a membership change, not charged
  double delay_s = 0;                        // the wait before the attempt (back-off, --min-restart-interval)
  bool operator==(const Restarting&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field.added("failed_attempt", self.failed_attempt);
                   field.added("progress", self.progress); field.added("checkpoint", self.checkpoint);
                   field.added("step", self.step); field.added("no_progress_restarts", self.no_progress_restarts);
                   field.added("restarts_left", self.restarts_left); field.added("delay_s", self.delay_s);)
};

// Where a restart's time went (launcher/supervisor/restart_timeline.hpp): each phase's time,
// seconds since the epoch, null when not observed (gpu_released: no NVML health gate; store_reached:
// not our store). Written at the new attempt's first progress, or when it ended before any.
struct RestartTimeline {
  static constexpr std::string_view kType = "restart_timeline";
  int attempt = 0, failed_attempt = 0;
  double failure_seen = 0;
  std::optional<double> group_stopped{}, gpu_released{}, spawn_began{}, spawned{}, interpreter_ready{}, store_reached{},
      first_progress{};
  std::optional<double> back_in_s{};  // first_progress - failure_seen
  std::string summary;                // "back to training in 0.42 s: stop 0.02, …"
  bool operator==(const RestartTimeline&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("failed_attempt", self.failed_attempt);
                   field("failure_seen", self.failure_seen); field("group_stopped", self.group_stopped);
                   field("gpu_released", self.gpu_released); field("spawn_began", self.spawn_began);
                   field("spawned", self.spawned); field("interpreter_ready", self.interpreter_ready);
                   field("store_reached", self.store_reached); field("first_progress", self.first_progress);
                   field("back_in_s", self.back_in_s); field("summary", self.summary);)
};

struct Finished {
  static constexpr std::string_view kType = "finished";
  int exit_code = 0;
  std::string state;  // the group's final state: SUCCEEDED | FAILED | INTERRUPTED
  int attempts = 0, restarts = 0;
  // Why a failed job was not restarted again: max_restarts (exit 1) | no_progress (exit 3,
  // --max-no-progress-restarts); null otherwise.
  std::optional<std::string> gave_up{};
  bool operator==(const Finished&) const = default;
  DDP_EVENT_FIELDS(field("exit_code", self.exit_code); field("state", self.state);
                   field.added("attempts", self.attempts); field.added("restarts", self.restarts);
                   field.added("gave_up", self.gave_up);)
};

struct RendezvousTimeout {
  static constexpr std::string_view kType = "rendezvous_timeout";
  int attempt = 0;
  std::optional<std::int64_t> arrived;  // null: the count could not be read
  int world_size = 0;
  std::vector<int> missing_local_ranks;  // the global ranks of this node that never arrived
  bool operator==(const RendezvousTimeout&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("arrived", self.arrived); field("world_size", self.world_size);
                   field("missing_local_ranks", self.missing_local_ranks);)
};

// The progress watchdog (`run --hang-timeout`): a rank made no progress for its timeout. The
// attempt fails (restarted within --max-restarts unless --on-hang fail).
struct HangDetected {
  static constexpr std::string_view kType = "hang_detected";
  int attempt = 0;
  int suspect = 0;               // the global rank that went silent first
  std::vector<int> ranks;        // every silent rank, the suspect first
  std::vector<double> silent_s;  // seconds without progress, one per rank of `ranks`
  std::vector<int> progressing;  // ranks still heard from
  // How long before the next silent rank the suspect went silent (null: the only silent one); under
  // 0.05 s the output could not tell the hung rank from the waiting ones.
  std::optional<double> first_by_s;
  std::string hang_timeout;                // the setting: "5s", "auto"
  double timeout_s = 0;                    // the suspect's timeout (auto: learned)
  std::optional<std::string> stacks_file;  // the ranks' stacks in the run directory; null: none taken
  bool operator==(const HangDetected&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("suspect", self.suspect); field("ranks", self.ranks);
                   field("silent_s", self.silent_s); field("progressing", self.progressing);
                   field("first_by_s", self.first_by_s); field("hang_timeout", self.hang_timeout);
                   field("timeout_s", self.timeout_s); field("stacks_file", self.stacks_file);)
};

struct RootCause {
  static constexpr std::string_view kType = "root_cause";
  int attempt = 0, rank = 0, local_rank = 0, pid = 0;
  ExitStatus status;                 // "exit_code" and "signal"
  std::string role;                  // original failure | lost a peer | stopped by the teardown
  std::optional<std::string> error;  // the rank's error file's message
  bool operator==(const RootCause&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("rank", self.rank); field("local_rank", self.local_rank);
                   field("pid", self.pid); field.exit(self.status); field("role", self.role);
                   field("error", self.error);)
};

struct GpuSample {
  static constexpr std::string_view kType = "gpu_sample";
  int rank = 0, local_rank = 0;
  std::string device;
  unsigned util = 0;  // percent
  double mem_used_mib = 0, mem_total_mib = 0;
  bool operator==(const GpuSample&) const = default;
  DDP_EVENT_FIELDS(field("rank", self.rank); field("local_rank", self.local_rank); field("device", self.device);
                   field("util", self.util); field("mem_used_mib", self.mem_used_mib);
                   field("mem_total_mib", self.mem_total_mib);)
};

struct GpuLowUtil {
  static constexpr std::string_view kType = "gpu_low_util";
  int rank = 0, local_rank = 0;
  std::string device;
  double mean_util = 0, seconds = 0;
  std::string message;
  bool operator==(const GpuLowUtil&) const = default;
  DDP_EVENT_FIELDS(field("rank", self.rank); field("local_rank", self.local_rank); field("device", self.device);
                   field("mean_util", self.mean_util); field("seconds", self.seconds); field("message", self.message);)
};

// A rank that keeps the others waiting (launcher/hang/straggler_detector.hpp): once per episode.
struct Straggler {
  static constexpr std::string_view kType = "straggler";
  int attempt = 0, rank = 0;
  double ratio = 0;          // its step rate ÷ the median step rate (under --straggler-threshold)
  double median_step_s = 0;  // seconds per step at the median rate
  double rank_step_s = 0;    // the rank's seconds per step
  bool operator==(const Straggler&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("rank", self.rank); field("ratio", self.ratio);
                   field("median_step_s", self.median_step_s); field("rank_step_s", self.rank_step_s);)
};

// torch's elastic file timer (TORCHELASTIC_ENABLE_FILE_TIMER=1): a worker's `with expires(after=N)`
// block passed its deadline; the supervisor signalled that pid (a rank's worker or its descendant).
struct TimerExpired {
  static constexpr std::string_view kType = "timer_expired";
  int attempt = 0, rank = 0, pid = 0;
  std::string scope_id;
  double deadline = 0;                // seconds since the epoch
  std::optional<std::string> signal;  // "SIGKILL"; null: the request asked for none (signal <= 0)
  bool operator==(const TimerExpired&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("rank", self.rank); field("pid", self.pid);
                   field("scope_id", self.scope_id); field("deadline", self.deadline); field("signal", self.signal);)
};

// A file of the run (a rank's stdout.log/stderr.log, metrics.csv, a filtered log) could not be
// written: a full disk, a quota, an I/O error. Once per file, at its first failed write (or its
// open); the ranks are not stopped or slowed, and the file lacks the bytes the summary counts.
struct WriteFailed {
  static constexpr std::string_view kType = "write_failed";
  std::optional<int> attempt, rank;  // the rank whose log it is; null: not one rank's (metrics.csv)
  std::string path;
  std::string error;  // "No space left on device"
  bool operator==(const WriteFailed&) const = default;
  DDP_EVENT_FIELDS(field("attempt", self.attempt); field("rank", self.rank); field("path", self.path);
                   field("error", self.error);)
};

#undef DDP_EVENT_FIELDS

// An event type this reader does not know (a newer writer's): its type and every field, kept.
struct Unknown {
  std::string type;
  nlohmann::json fields = nlohmann::json::object();
  bool operator==(const Unknown&) const = default;
};

using Payload = std::variant<Started, SweptPredecessor, RoundEnded, RendezvousClosed, NodeLost, RendezvousComplete,
                             FilestoreCleaned, FilestoreFound, RankStarted, RankExited, GroupStopping, Restarting,
                             Finished, RendezvousTimeout, RootCause, GpuSample, GpuLowUtil, Straggler, TimerExpired,
                             HangDetected, WriteFailed, RestartTimeline, Unknown>;

// One line of the stream.
struct Event {
  Payload payload;
  double time = 0;               // seconds since the epoch; 0 when a line had none
  int version = kSchemaVersion;  // "v"
  bool operator==(const Event&) const = default;

  template <class T>
  const T* as() const {
    return std::get_if<T>(&payload);
  }
};

// The "event" value: "rank_exited"; an Unknown's own type.
std::string type_name(const Payload& payload);

// The event as its JSON object ("event", "time", "v" and its fields).
nlohmann::json to_json(const Event& event);
// One line of the file, newline included. A worker's bytes (an error file's message, a node's
// leave reason) need not be UTF-8: replaced, never a throw; NUL is escaped like any control character.
std::string to_line(const Event& event);

// Thrown by from_json / parse_line: names the event type and the field that is wrong.
struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// A known type with a missing or mistyped field, or an object without "event", throws
// ParseError; an unknown type reads as Unknown.
Event from_json(const nlohmann::json& object);
Event parse_line(std::string_view line);  // also throws ParseError when the line is not JSON

}  // namespace ddp::events
