#pragma once
// File operations whose POSIX and Windows forms differ.
#include <filesystem>
#include <string>

namespace ddp::platform {

// A new directory `parent`/`prefix`XXXXXX, made atomically with a name no one else got (mkdtemp;
// Windows: CreateDirectory, which fails on an existing name, over random suffixes). Throws
// std::system_error naming what failed.
std::filesystem::path make_unique_directory(const std::filesystem::path& parent, const std::string& prefix);

// Writes `content` to `path`, replacing it, readable and writable by its owner only (POSIX: created
// 0600 and fchmod'ed 0600 should it exist; Windows: a plain write, the directory's ACL governs).
// false with `error` saying why.
bool write_private_file(const std::filesystem::path& path, const std::string& content, std::string& error);

// An exclusive lock on `path` (created 0600), held until the process ends: one holder per file
// (POSIX: flock(LOCK_EX|LOCK_NB), and our pid written into it). Windows: not yet (the job daemon is
// Linux-only for now, issue 27): Failed.
enum class ProcessLock { Held, Busy, Failed };
ProcessLock lock_for_process_lifetime(const std::filesystem::path& path, std::string& error);

}  // namespace ddp::platform
