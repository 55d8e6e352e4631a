#include "launcher/supervisor/filestore_scan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "launcher/outputs/run_record.hpp"
#include "store/filestore.hpp"

namespace fs = std::filesystem;

namespace ddp::launcher {
namespace {

constexpr std::uintmax_t kMaxBytes = std::uintmax_t{16} << 20;

bool holds_a_filestore(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(p, ec))) return false;  // a link is not followed
  const auto size = fs::file_size(p, ec);
  if (ec || size == 0 || size > kMaxBytes) return false;
  std::ifstream in(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return !bytes.empty() && store::FileStoreLog::parse(bytes).is_filestore();
}

std::optional<RunRecordContent> read_record(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return parse_run_record(text);
  } catch (const std::exception&) {
    return std::nullopt;  // not a record of ours, or one being written
  }
}

}  // namespace

std::vector<FileStoreOnDisk> filestores_on_disk(const fs::path& temp_dir, std::size_t max_entries) {
  std::vector<FileStoreOnDisk> out;
  auto add = [&](fs::path p, std::string why) {
    std::error_code ec;
    auto canon = fs::weakly_canonical(p, ec);
    if (!ec) p = canon;
    if (std::none_of(out.begin(), out.end(), [&](const FileStoreOnDisk& f) { return f.path == p; })) {
      out.push_back({std::move(p), std::move(why)});
    }
  };
  std::error_code ec;
  std::size_t seen = 0;
  for (const auto& e : fs::directory_iterator(temp_dir, fs::directory_options::skip_permission_denied, ec)) {
    if (++seen > max_entries) break;
    const auto name = e.path().filename().string();
    fs::path record;
    std::error_code dec;
    if (name.starts_with(kRunDirPrefix) && name.ends_with(kRunIdRecordSuffix)) {
      record = e.path();
    } else if (name.starts_with(kRunDirPrefix) && e.is_directory(dec)) {
      record = e.path() / "processes.json";
    } else {
      if (holds_a_filestore(e.path())) add(e.path(), "in the temporary directory");
      continue;
    }
    auto r = read_record(record);
    if (!r) continue;
    auto sup = proc::read_proc_stat(r->supervisor.pid);
    if (r->supervisor.pid > 0 && sup && sup->start_time == r->supervisor.start_time) continue;  // its run lives
    for (const auto& f : r->filestores) {
      if (holds_a_filestore(f)) {
        add(f, fmt::format("named by the record of a run whose supervisor (pid {}) is gone: {}", r->supervisor.pid,
                           record.string()));
      }
    }
  }
  return out;
}

}  // namespace ddp::launcher
