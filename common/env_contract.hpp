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
// torch's elastic file timer (launcher/hang/file_timer.hpp): exactly "1" in the supervisor's environment
// makes it serve the FIFO torch's FileTimerClient writes to; the FIFO's path, exported to the workers.
inline constexpr std::string_view kEnableFileTimer = "TORCHELASTIC_ENABLE_FILE_TIMER";
inline constexpr std::string_view kTimerFile = "TORCHELASTIC_TIMER_FILE";

// Set to 1 unless the user set them: NCCL tears down a hung collective instead of hanging.
inline constexpr std::string_view kNcclAsyncErrorHandling = "NCCL_ASYNC_ERROR_HANDLING";             // torch 1.13
inline constexpr std::string_view kTorchNcclAsyncErrorHandling = "TORCH_NCCL_ASYNC_ERROR_HANDLING";  // 2.x
// Forced to 1 when unset and several ranks share a node (torchrun does the same).
inline constexpr std::string_view kOmpNumThreads = "OMP_NUM_THREADS";
// Hang forensics (launcher/hang/hang_forensics.hpp), each set only when the user left it unset:
// Python workers dump every thread's traceback to stderr on SIGABRT (and SIGSEGV, ...).
inline constexpr std::string_view kPythonFaultHandler = "PYTHONFAULTHANDLER";
// NCCL jobs: torch's flight recorder (ProcessGroupNCCL) keeps the last N collectives, dumps them
// on a timeout or when the store key `exception_dump` appears, one file per rank: <prefix><rank>.
inline constexpr std::string_view kTorchNcclTraceBufferSize = "TORCH_NCCL_TRACE_BUFFER_SIZE";
inline constexpr std::string_view kTorchNcclDumpOnTimeout = "TORCH_NCCL_DUMP_ON_TIMEOUT";
inline constexpr std::string_view kTorchNcclDebugInfoTempFile = "TORCH_NCCL_DEBUG_INFO_TEMP_FILE";
// gloo's interface. Without it gloo advertises the address the host name resolves to; with several
// nodes, when that is a loopback address, the supervisor sets it (if unset) to the interface that
// reaches the rendezvous store.
inline constexpr std::string_view kGlooSocketIfname = "GLOO_SOCKET_IFNAME";
// torch ≥ 2.4's TCPStore uses libuv unless this is 0; its Windows wheels lack libuv (pytorch#139990).
inline constexpr std::string_view kUseLibuv = "USE_LIBUV";

// The workers' interpreter (torchrun's name); `run` without --python also looks at an active
// virtualenv and conda environment for one that can import torch.
inline constexpr std::string_view kPythonExec = "PYTHON_EXEC";
inline constexpr std::string_view kVirtualEnv = "VIRTUAL_ENV";
inline constexpr std::string_view kCondaPrefix = "CONDA_PREFIX";

// --- ours ---
inline constexpr std::string_view kLogLevel = "DDP_LOG_LEVEL";  // trace|debug|info|warn|error
// `run --store file`: the FileStore file of this attempt (init_method="file://" + this value).
// Fresh for every attempt; the supervisor removes it after the job.
inline constexpr std::string_view kFileStorePath = "DDP_FILESTORE_PATH";
// The rank's heartbeat file (<run_dir>/attempt_<k>/heartbeats/local_rank_<N>): a write, a touch or an open-for-write of
// it is progress evidence for the hang watchdog (`run --hang-timeout`), seen through inotify, no polling. Python
// without a package: open(os.environ["DDP_HEARTBEAT_FILE"], "w").close(); C++: ddp::worker::heartbeat()
// (worker/heartbeat.hpp).
inline constexpr std::string_view kHeartbeatFile = "DDP_HEARTBEAT_FILE";

// --- batch policy (`run --global-batch B` or `--per-rank-batch b`), read by the examples/SDK ---
// Global batch across all ranks (per-rank batch × WORLD_SIZE).
inline constexpr std::string_view kGlobalBatch = "DDP_GLOBAL_BATCH";
// Batch each rank processes per step.
inline constexpr std::string_view kPerRankBatch = "DDP_PER_RANK_BATCH";
// Multiply the base learning rate by this (linear scaling rule; 1 when the global batch is fixed).
inline constexpr std::string_view kLrScale = "DDP_LR_SCALE";
// Steps over which the scaled learning rate ramps up from the base one (0: no warm-up).
inline constexpr std::string_view kLrWarmupSteps = "DDP_LR_WARMUP_STEPS";

// --- metric lines: a worker prints `@ddp-metric step=12 loss=0.5312 samples_per_s=812.4` on
// stdout (keys [A-Za-z_][A-Za-z0-9_.]*, values decimal numbers); the supervisor keeps them per
// rank in <run_dir>/metrics.csv. Spelled here so the SDK and the supervisor agree.
inline constexpr std::string_view kMetricLinePrefix = "@ddp-metric ";

// --- the worker SDK's SIGABRT backtrace (worker/stack_dump.hpp) on stderr, between these two
// lines, glibc's backtrace_symbols_fd format in between; the hang forensics parse it
// (launcher/hang/stack_report.hpp). Spelled here so the SDK and the supervisor agree.
inline constexpr std::string_view kAbortBacktraceBegin = "ddp-worker: SIGABRT backtrace";
inline constexpr std::string_view kAbortBacktraceEnd = "ddp-worker: end of backtrace";

// --- Slurm: read by `ddp-launch run` under srun (slurm/slurm.hpp), never set by us ---
inline constexpr std::string_view kSlurmPrefix = "SLURM_";
inline constexpr std::string_view kSlurmJobId = "SLURM_JOB_ID";
inline constexpr std::string_view kSlurmStepId = "SLURM_STEP_ID";  // only inside an srun step
inline constexpr std::string_view kSlurmNnodes = "SLURM_NNODES";   // nodes of the step (job in a batch script)
inline constexpr std::string_view kSlurmStepNumNodes = "SLURM_STEP_NUM_NODES";
inline constexpr std::string_view kSlurmNodeId = "SLURM_NODEID";               // this node's index in the step
inline constexpr std::string_view kSlurmJobNodelist = "SLURM_JOB_NODELIST";    // the whole allocation
inline constexpr std::string_view kSlurmStepNodelist = "SLURM_STEP_NODELIST";  // the step's nodes (may be fewer)
inline constexpr std::string_view kSlurmNtasks = "SLURM_NTASKS";
inline constexpr std::string_view kSlurmStepNumTasks = "SLURM_STEP_NUM_TASKS";
inline constexpr std::string_view kSlurmLocalId = "SLURM_LOCALID";  // task index on this node
inline constexpr std::string_view kSlurmProcId = "SLURM_PROCID";    // task index in the step
// --- the job daemon (`ddp-launch daemon`) and the supervisors it starts ---
// Which GPUs a job may use; the daemon sets it per job (empty: none) so jobs never share one.
// The supervisor's GPU watch maps local rank i to the i-th device listed.
inline constexpr std::string_view kCudaVisibleDevices = "CUDA_VISIBLE_DEVICES";
// PCI_BUS_ID: CUDA numbers devices as NVML (and the daemon's GPU table) does.
inline constexpr std::string_view kCudaDeviceOrder = "CUDA_DEVICE_ORDER";
// Set to 1 for daemon jobs: Python's output reaches the per-rank logs as it is printed.
inline constexpr std::string_view kPythonUnbuffered = "PYTHONUNBUFFERED";
inline constexpr std::string_view kJobId = "DDP_JOB_ID";  // the daemon's id of the job
// The daemon's unix socket, for the daemon and its clients (default under $XDG_RUNTIME_DIR).
inline constexpr std::string_view kDaemonSocket = "DDP_DAEMON_SOCKET";
inline constexpr std::string_view kXdgRuntimeDir = "XDG_RUNTIME_DIR";
inline constexpr std::string_view kXdgStateHome = "XDG_STATE_HOME";
inline constexpr std::string_view kHome = "HOME";  // ~/.local/state/ddp-launch without XDG_STATE_HOME
// Windows: %LOCALAPPDATA%\ddp-launch without XDG_STATE_HOME (before HOME, which Wine passes on as
// a Unix path).
inline constexpr std::string_view kLocalAppData = "LOCALAPPDATA";

}  // namespace ddp::env
