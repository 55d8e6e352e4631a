#pragma once
// File operations whose POSIX and Windows forms differ.
#include <filesystem>
#include <string>

namespace ddp::platform {

// A new directory `parent`/`prefix`XXXXXX, made atomically with a name no one else got (mkdtemp;
// Windows: CreateDirectory, which fails on an existing name, over random suffixes). Throws
// std::system_error naming what failed.
std::filesystem::path make_unique_directory(const std::filesystem::path& parent, const std::string& prefix);

}  // namespace ddp::platform
