#pragma once
// File operations whose POSIX and Windows forms differ.
#include <filesystem>
#include <optional>
#include <string>

namespace ddp::platform {

// A new directory `parent`/`prefix`XXXXXX, made atomically with a name no one else got (mkdtemp;
// Windows: CreateDirectory, which fails on an existing name, over random suffixes). Throws
// std::system_error naming what failed.
std::filesystem::path make_unique_directory(const std::filesystem::path& parent, const std::string& prefix);

// When the file at `path` was created (its birth time), in seconds since the epoch; nullopt where
// the filesystem does not keep one (Linux: statx's STATX_BTIME, absent on some filesystems;
// Windows: the creation time) or the file cannot be read.
std::optional<double> file_birth_time(const std::filesystem::path& path);

}  // namespace ddp::platform
