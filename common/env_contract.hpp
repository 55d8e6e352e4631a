#pragma once
// The environment-variable contract between the supervisor and its workers. This header is the
// only place that spells these names; everything else refers to the constants.
#include <string_view>

namespace ddp::env {

// --- torchrun's worker contract (read by init_process_group(init_method="env://")) ---
inline constexpr std::string_view kMasterAddr = "MASTER_ADDR";  // host of the rendezvous store
inline constexpr std::string_view kMasterPort = "MASTER_PORT";  // port of the rendezvous store
inline constexpr std::string_view kRank = "RANK";               // global rank, 0..WORLD_SIZE-1
inline constexpr std::string_view kWorldSize = "WORLD_SIZE";    // number of ranks in the job
inline constexpr std::string_view kLocalRank = "LOCAL_RANK";    // rank on this node
inline constexpr std::string_view kLocalWorldSize = "LOCAL_WORLD_SIZE";
inline constexpr std::string_view kGroupRank = "GROUP_RANK";  // node rank
inline constexpr std::string_view kGroupWorldSize = "GROUP_WORLD_SIZE";
inline constexpr std::string_view kRoleRank = "ROLE_RANK";
inline constexpr std::string_view kRoleWorldSize = "ROLE_WORLD_SIZE";
inline constexpr std::string_view kRoleName = "ROLE_NAME";
// Restart attempt number; torch 1.13 prefixes store keys with /worker/attempt_<n> from it.
inline constexpr std::string_view kRestartCount = "TORCHELASTIC_RESTART_COUNT";
inline constexpr std::string_view kMaxRestarts = "TORCHELASTIC_MAX_RESTARTS";
inline constexpr std::string_view kRunId = "TORCHELASTIC_RUN_ID";
// Exactly "True" makes workers use the agent's store as a plain client.
inline constexpr std::string_view kUseAgentStore = "TORCHELASTIC_USE_AGENT_STORE";
inline constexpr std::string_view kErrorFile = "TORCHELASTIC_ERROR_FILE";

// Set to 1 unless the user set them: NCCL tears down a hung collective instead of hanging.
inline constexpr std::string_view kNcclAsyncErrorHandling = "NCCL_ASYNC_ERROR_HANDLING";  // torch 1.13
inline constexpr std::string_view kTorchNcclAsyncErrorHandling = "TORCH_NCCL_ASYNC_ERROR_HANDLING";  // 2.x
// Forced to 1 when unset and several ranks share a node (torchrun does the same).
inline constexpr std::string_view kOmpNumThreads = "OMP_NUM_THREADS";

// --- ours ---
inline constexpr std::string_view kLogLevel = "DDP_LOG_LEVEL";  // trace|debug|info|warn|error
// `run --store file`: the FileStore file of this attempt (init_method="file://" + this value).
// Fresh for every attempt; the supervisor removes it after the job.
inline constexpr std::string_view kFileStorePath = "DDP_FILESTORE_PATH";

}  // namespace ddp::env
