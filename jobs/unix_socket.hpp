#pragma once
// The daemon's unix socket path: what may be replaced there.
#include <filesystem>

namespace ddp::jobs {

// What is at --socket PATH may go only if it is a socket nobody answers on (its daemon is gone).
// Anything else (a file, a directory, a link, a live daemon's socket) is the user's: UsageError
// naming --socket.
void remove_stale_socket(const std::filesystem::path& path);

}  // namespace ddp::jobs
