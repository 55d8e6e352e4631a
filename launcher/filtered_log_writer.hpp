#pragma once
// FilteredLogWriter: the shell that writes --duplicate-stdout-filters/--duplicate-stderr-filters
// lines (launcher/rank_log_lines.hpp) to <run_dir>/attempt_N/filtered_{stdout,stderr}.log.
// The event loop only queues: a writer thread appends, so a slow disk never stalls the loop (and,
// through full pipes, the workers). Beyond kMaxQueuedBytes lines are counted and reported, not
// waited for. No thread is started when nothing matches.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "launcher/rank_log_lines.hpp"

namespace ddp::launcher {

class FilteredLogWriter {
 public:
  FilteredLogWriter(std::filesystem::path run_dir, DuplicateFilters filters);
  ~FilteredLogWriter();
  FilteredLogWriter(const FilteredLogWriter&) = delete;
  FilteredLogWriter& operator=(const FilteredLogWriter&) = delete;

  // A rank's whole line (without '\n') and the prefix its console line gets.
  void on_line(int attempt, bool is_stderr, std::string_view prefix, std::string_view line);
  // Writes what is queued and stops the thread; says so when lines were dropped.
  void finish();

  static constexpr std::size_t kMaxQueuedBytes = 8u << 20;

 private:
  struct Entry {
    int attempt;
    bool is_stderr;
    std::string text;
  };
  void loop();
  // Writes a batch (writer thread); returns the lines it could not write.
  std::size_t write(std::deque<Entry>& batch);

  std::filesystem::path run_dir_;
  DuplicateFilters filters_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Entry> queue_;
  std::size_t queued_bytes_ = 0;
  std::size_t dropped_ = 0;
  std::size_t failed_ = 0;  // lines the writer could not write (the file could not be opened)
  bool done_ = false;
  std::ofstream files_[2];  // writer thread only: stdout, stderr
  int attempt_of_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace ddp::launcher
