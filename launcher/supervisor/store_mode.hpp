#pragma once
// --store: where the workers meet (launcher/supervisor/worker_store.hpp hosts or prepares it).

namespace ddp::launcher {

// Agent: we host a TCPStore; Rank0: the script's rank 0 does; File: a FileStore file per attempt
// (workers use init_method="file://..." from {filestore_url} or DDP_FILESTORE_PATH).
enum class StoreMode { Agent, Rank0, File };
const char* store_mode_name(StoreMode mode);  // "agent", "rank0", "file"

}  // namespace ddp::launcher
