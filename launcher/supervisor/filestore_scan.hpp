#pragma once
// Where `doctor` looks for FileStore files earlier runs left, when it is given none
// (`--filestore PATH` checks those instead): the regular files directly in the temporary directory
// whose bytes are a c10d FileStore log, and the FileStores named by the run records there
// (launcher/outputs/run_record.hpp: a run id's record, a temporary run directory's processes.json) whose
// supervisor is gone. Nothing is read past a bounded number of entries and bytes.
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

namespace ddp::launcher {

struct FileStoreOnDisk {
  std::filesystem::path path;
  std::string why;  // "in the temporary directory", "named by the record of a dead run (…)"
};

// At most `max_entries` directory entries are looked at; files over 16 MiB are not read.
std::vector<FileStoreOnDisk> filestores_on_disk(const std::filesystem::path& temp_dir, std::size_t max_entries = 4096);

}  // namespace ddp::launcher
