#pragma once
// FilteredLogWriter: the --duplicate-stdout-filters/--duplicate-stderr-filters lines
// (launcher/workers/rank_log_lines.hpp) to <run_dir>/attempt_N/filtered_{stdout,stderr}.log. The event
// loop only queues them on the supervisor's FileWriter (launcher/outputs/file_writer.hpp): a slow disk
// never stalls the loop; lines beyond its bound are counted and reported, not waited for. No file
// is opened when nothing matches.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string_view>
#include <vector>

#include "launcher/outputs/file_writer.hpp"
#include "launcher/workers/rank_log_lines.hpp"

namespace ddp::launcher {

class FilteredLogWriter {
 public:
  FilteredLogWriter(FileWriter& files, std::filesystem::path run_dir, DuplicateFilters filters);
  FilteredLogWriter(const FilteredLogWriter&) = delete;
  FilteredLogWriter& operator=(const FilteredLogWriter&) = delete;

  // A rank's whole line (without '\n') and the prefix its console line gets.
  void on_line(int attempt, bool is_stderr, std::string_view prefix, std::string_view line);
  // After the FileWriter finished: says so when lines were dropped or could not be written.
  void finish();

 private:
  FileWriter& files_;
  std::filesystem::path run_dir_;
  DuplicateFilters filters_;
  std::size_t dropped_ = 0;
  std::vector<FileWriter::FileId> opened_;  // every attempt's, for their failed writes
  bool finished_ = false;
  std::optional<FileWriter::FileId> file_[2];  // stdout, stderr: the current attempt's
  int attempt_of_[2] = {-1, -1};
};

}  // namespace ddp::launcher
