#pragma once
// What the rendezvous watchdog can learn when the supervisor does not host the store
// (`--store rank0`: the script's rank 0 does; `--store file`: a FileStore file).
//
// Complete: the ranks' own count reached the world size — torch's TCPStore clients add 1 to "init/"
// when they connect, and torch 1.13's init_process_group ends with a store-based barrier that adds
// 1 to <prefix>/store_based_barrier_key:<n>. A rank "arrived" when it holds a TCP connection to
// MASTER_PORT (rank0), or published itself in the FileStore (gloo's .../rank_<r> key) or holds the
// file open at the moment (file). The watchdog fails an attempt only when some local rank is
// provably in the rendezvous and another is not: a job whose ranks all left the store behind
// (destroy_process_group, then long post-processing) is never mistaken for a hang.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "store/filestore.hpp"

namespace ddp::launcher {

// Pure: the FileStore log's barrier count (the largest store_based_barrier_key counter), or nullopt.
std::optional<std::int64_t> filestore_barrier_count(const store::FileStoreLog& log);
// Pure: whether global rank `rank` wrote its gloo rendezvous key ("/.../rank_<rank>") to the FileStore.
bool filestore_names_rank(const store::FileStoreLog& log, int rank);

// The FileStore at `path`, parsed (empty log when absent or unreadable).
store::FileStoreLog read_filestore(const std::filesystem::path& path);

// --store rank0: asks the script's store at host:port (dialect A: torch 1.13's server) how many
// clients added themselves to "init/"; nullopt when it does not answer within ~2 s.
std::optional<std::int64_t> rank0_store_arrivals(const std::string& host, std::uint16_t port);

}  // namespace ddp::launcher
