#pragma once
// WorkerEnv: a rank's assignment + the launch options → its environment and argv. Pure.
// The variables are torchrun's (so unchanged scripts run), spelled in common/env_contract.hpp.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "launcher/workers/rank_plan.hpp"

namespace ddp::launcher {

using EnvMap = std::map<std::string, std::string>;

struct WorkerEnvInput {
  RankAssignment ranks;
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 0;
  int restart_count = 0;
  int max_restarts = 0;
  std::string run_id = "none";
  bool use_agent_store = true;   // TORCHELASTIC_USE_AGENT_STORE=True: workers are plain store clients
  std::string error_file;        // TORCHELASTIC_ERROR_FILE for this rank and attempt
  std::string backend = "gloo";  // for the {backend} placeholder
  std::string filestore_path;    // --store file: DDP_FILESTORE_PATH and {filestore_url}; empty: none
  std::string timer_file;        // the torch elastic timer's FIFO: TORCHELASTIC_TIMER_FILE; empty: none
  std::string heartbeat_file;    // DDP_HEARTBEAT_FILE (the hang watchdog's); empty: none
  EnvMap base_env;               // the supervisor's own environment, inherited
  // torchrun's --virtual-local-rank (torch 2.x): LOCAL_RANK=0, CUDA_VISIBLE_DEVICES = this rank's
  // device only (its entry of the inherited list, else its local rank).
  bool virtual_local_rank = false;
  // NCCL's flight-recorder dumps go to <this><rank> (TORCH_NCCL_DEBUG_INFO_TEMP_FILE):
  // <run_dir>/attempt_N/nccl_trace_rank_. Empty: the variable is left alone.
  std::string nccl_trace_prefix;
};

struct WorkerLaunch {
  EnvMap env;
  std::vector<std::string> argv;
};

// Values for the argv placeholders {rank} {local_rank} {world_size} {master_addr} {master_port}
// {dist_url} {backend}, {filestore_url} (file://PATH) with --store file, and {per_rank_batch}
// {global_batch} {lr_scale} when the batch policy's variables are in base_env (run --global-batch
// or --per-rank-batch); "{{" and "}}" stand for literal braces.
std::map<std::string, std::string> placeholder_values(const WorkerEnvInput& in);

// The batch placeholders and the variable each one copies: (per_rank_batch, DDP_PER_RANK_BATCH) ...
const std::vector<std::pair<std::string_view, std::string_view>>& batch_placeholders();

// Expands placeholders in one argument. An unknown {name} is a ddp::UsageError listing the known
// ones; a batch placeholder without a batch policy is one naming --global-batch/--per-rank-batch.
std::string expand_placeholders(std::string_view arg, const std::map<std::string, std::string>& values);

// Whether the job uses NCCL: --backend nccl, or the user set NCCL's or torch's NCCL variables.
bool uses_nccl(std::string_view backend, const EnvMap& base_env);

// What the hang forensics need in a worker's environment, for variables the user left unset:
// PYTHONFAULTHANDLER=1 (a SIGABRT dumps every Python thread's traceback to stderr), and for NCCL
// jobs the flight recorder: TORCH_NCCL_TRACE_BUFFER_SIZE=2000, TORCH_NCCL_DUMP_ON_TIMEOUT=1,
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE=nccl_trace_prefix (when given).
EnvMap hang_forensics_env(const WorkerEnvInput& in);

WorkerLaunch make_worker_launch(const WorkerEnvInput& in, const std::vector<std::string>& argv_template);

// --virtual-local-rank: local rank i's device, the i-th entry of CUDA_VISIBLE_DEVICES in
// `base_env` (torch 2.x's rule), or "i" when it is unset or shorter.
std::string visible_device_of(const EnvMap& base_env, int local_rank);

// torchrun's rule: OMP_NUM_THREADS=1 when the user left it unset and more than one rank shares
// the node. Returns the value to set, or nullopt to leave the environment alone.
std::optional<std::string> omp_threads_default(const EnvMap& base_env, int local_world_size);

// torchrun's -r/--redirects and -t/--tee value: one bit mask 0..3 (1 stdout, 2 stderr) for every
// local rank, or per local rank "i:v,i:v" (local ranks not listed: 0). Returns one mask per local
// rank (nproc of them). A malformed value or a local rank outside 0..nproc-1 is a ddp::UsageError
// naming `flag`.
std::vector<int> parse_std_streams(std::string_view value, int nproc, std::string_view flag);

// --local-ranks-filter "0,2": which local ranks the console shows (files are unaffected). Empty:
// all of them. Returns one flag per local rank; a bad entry is a ddp::UsageError.
std::vector<bool> parse_local_ranks_filter(std::string_view value, int nproc);

}  // namespace ddp::launcher
