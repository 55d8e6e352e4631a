#include "jobs/run_logs.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <fstream>

namespace ddp::jobs {

namespace fs = std::filesystem;

std::optional<fs::path> supervisor_log_dir(const fs::path& run_dir) {
  std::optional<fs::path> best;
  fs::file_time_type best_time;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir / "logs", ec)) {
    std::error_code dec;
    if (!e.is_directory(dec)) continue;
    auto t = fs::last_write_time(e.path(), dec);
    if (dec) continue;
    if (!best || t > best_time) {
      best = e.path();
      best_time = t;
    }
  }
  return best;
}

std::optional<fs::path> latest_attempt_dir(const fs::path& run_dir) {
  auto dir = supervisor_log_dir(run_dir);
  if (!dir) return std::nullopt;
  std::optional<int> best;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(*dir, ec)) {
    auto name = e.path().filename().string();
    if (name.rfind("attempt_", 0) != 0) continue;
    auto digits = name.substr(8);
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) continue;
    int k = std::stoi(digits);
    if (!best || k > *best) best = k;
  }
  if (!best) return std::nullopt;
  return *dir / fmt::format("attempt_{}", *best);
}

std::optional<fs::path> rank_log_path(const fs::path& run_dir, const std::string& rank, const std::string& stream) {
  if (rank == "supervisor") return run_dir / "supervisor.log";
  auto dir = latest_attempt_dir(run_dir);
  if (!dir) return std::nullopt;
  auto p = *dir / rank / (stream + ".log");
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  return p;
}

bool link_run_records(const fs::path& run_dir, const fs::path& supervisor_run_dir) {
  bool ok = true;
  for (const char* name : {"metrics.csv", "run.json"}) {
    auto link = run_dir / name;
    auto target = (supervisor_run_dir / name).lexically_relative(run_dir);
    if (target.empty()) target = supervisor_run_dir / name;  // not below the run: an absolute link
    std::error_code ec;
    fs::remove(link, ec);
    fs::create_symlink(target, link, ec);
    if (ec) {
      spdlog::warn("cannot link {} to {}: {}", link.string(), target.string(), ec.message());
      ok = false;
    }
  }
  return ok;
}

std::string read_file_tail(const std::filesystem::path& p, std::size_t max_bytes) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  auto size = static_cast<std::size_t>(in.tellg());
  auto start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(static_cast<std::streamoff>(start));
  std::string out(size - start, '\0');
  in.read(out.data(), static_cast<std::streamsize>(out.size()));
  out.resize(static_cast<std::size_t>(in.gcount()));
  return out;
}

std::map<int, fs::path> rank_stdout_files(const fs::path& run_dir) {
  std::map<int, fs::path> files;
  auto dir = latest_attempt_dir(run_dir);
  if (!dir) return files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(*dir, ec)) {
    auto name = e.path().filename().string();
    if (name.empty() || name.size() > 9 || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code fec;
    if (fs::exists(e.path() / "stdout.log", fec)) files[std::stoi(name)] = e.path() / "stdout.log";
  }
  return files;
}

}  // namespace ddp::jobs
