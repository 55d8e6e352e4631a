// The pure half of launcher/workers/cgroup.hpp: /proc and cgroup file text → values.
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <sstream>

#include "launcher/workers/cgroup.hpp"

namespace ddp::launcher {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    auto at = text.find(sep, start);
    out.push_back(text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

}  // namespace

std::optional<std::filesystem::path> CgroupMount::dir_of(std::string_view path) const {
  std::string_view rest = path;
  if (root != "/") {
    if (rest.rfind(root, 0) != 0 || (rest.size() > root.size() && rest[root.size()] != '/')) return std::nullopt;
    rest.remove_prefix(root.size());
  }
  while (!rest.empty() && rest.front() == '/') rest.remove_prefix(1);
  return rest.empty() ? mountpoint : mountpoint / std::string(rest);
}

OwnCgroups parse_proc_cgroup(std::string_view text) {
  OwnCgroups out;
  for (auto line : split(text, '\n')) {
    auto first = line.find(':');
    auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    auto controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (line.substr(0, first) == "0" && controllers.empty()) out.v2 = path;
    for (auto c : split(controllers, ',')) {
      if (c == "memory") out.v1_memory = path;
    }
  }
  return out;
}

CgroupMounts parse_mountinfo(std::string_view text) {
  CgroupMounts out;
  for (auto line : split(text, '\n')) {
    auto fields = split(line, ' ');
    std::size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash < 5 || dash + 3 > fields.size()) continue;
    auto root = fields[3];
    auto mountpoint = fields[4];
    auto fstype = fields[dash + 1];
    if (fstype == "cgroup2" && !out.v2) out.v2 = CgroupMount{std::string(mountpoint), std::string(root)};
    if (fstype == "cgroup" && !out.v1_memory) {
      for (auto opt : split(fields[dash + 3], ',')) {
        if (opt == "memory") out.v1_memory = CgroupMount{std::string(mountpoint), std::string(root)};
      }
    }
  }
  return out;
}

std::optional<std::uint64_t> parse_oom_kill_count(std::string_view text) {
  for (auto line : split(text, '\n')) {
    if (line.rfind("oom_kill ", 0) != 0) continue;
    try {
      return std::stoull(std::string(line.substr(9)));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

bool kernel_log_names_oom_kill(std::string_view record, pid_t pid) {
  // "Out of memory: Killed process 123 (python3) total-vm:..." and "Memory cgroup out of memory:
  // Killed process 123 (...)"; the "oom-kill:constraint=...,task=python3,pid=123,uid=0" summary.
  for (auto needle : {fmt::format("Killed process {} (", pid), fmt::format(",pid={},", pid)}) {
    if (record.find(needle) == std::string_view::npos) continue;
    if (needle[0] == 'K' || record.find("oom-kill:") != std::string_view::npos) return true;
  }
  return false;
}

std::optional<std::uint64_t> parse_memory_size(std::string_view text) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  if (s.size() > 2 && (s.ends_with("iB") || s.ends_with("ib"))) s.resize(s.size() - 2);
  else if (s.size() > 1 && (s.back() == 'B' || s.back() == 'b')) s.pop_back();
  double scale = 1;
  if (!s.empty()) {
    switch (std::toupper(static_cast<unsigned char>(s.back()))) {
      case 'K': scale = 1024.0; break;
      case 'M': scale = 1024.0 * 1024; break;
      case 'G': scale = 1024.0 * 1024 * 1024; break;
      case 'T': scale = 1024.0 * 1024 * 1024 * 1024; break;
      default: break;
    }
    if (scale != 1) s.pop_back();
  }
  if (s.empty() || s.find_first_not_of("0123456789.") != std::string::npos) return std::nullopt;
  std::istringstream in(s);
  double value = 0;
  if (!(in >> value) || !in.eof() || value <= 0) return std::nullopt;
  double bytes = std::floor(value * scale);
  if (bytes < 1 || bytes > 1.8e19) return std::nullopt;
  return static_cast<std::uint64_t>(bytes);
}

std::string format_memory_size(std::uint64_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (u == 0) return fmt::format("{} bytes", bytes);
  return v == std::floor(v) ? fmt::format("{:.0f} {}", v, units[u]) : fmt::format("{:.1f} {}", v, units[u]);
}

}  // namespace ddp::launcher
