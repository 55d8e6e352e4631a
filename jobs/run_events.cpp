#include "jobs/run_events.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "jobs/run_outcome.hpp"

namespace ddp::jobs {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::optional<int> RunEventReader::watch(const fs::path& run_dir, std::function<void()> on_change) {
  return files_.watch(events_file(run_dir), std::move(on_change));
}

void RunEventReader::unwatch(int token) { files_.unwatch(token); }

std::optional<RunEventReader::NewEvents> RunEventReader::read_new(JobRecord& rec) {
  if (rec.run_dir.empty()) return std::nullopt;
  std::ifstream in(events_file(rec.run_dir), std::ios::binary);
  if (!in) return std::nullopt;
  in.seekg(rec.events_offset);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto chunk = parse_event_lines(data);
  if (chunk.consumed == 0) return std::nullopt;  // only a partial line so far
  for (const auto& why : chunk.unreadable) spdlog::warn("job {}: ignoring an unreadable event line: {}", rec.id, why);
  NewEvents out;
  out.from = rec.events_offset;
  rec.events_offset += static_cast<std::int64_t>(chunk.consumed);
  out.to = rec.events_offset;
  out.events.reserve(chunk.events.size());
  for (auto& line : chunk.events) out.events.push_back(std::move(line.event));
  return out;
}

std::vector<events::Event> RunEventReader::replay(const JobRecord& rec) {
  std::vector<events::Event> out;
  if (rec.run_dir.empty() || rec.events_offset <= 0) return out;
  std::ifstream in(events_file(rec.run_dir), std::ios::binary);
  std::string data(static_cast<std::size_t>(rec.events_offset), '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  data.resize(static_cast<std::size_t>(in.gcount()));
  for (auto& line : parse_event_lines(data).events) out.push_back(std::move(line.event));
  return out;
}

}  // namespace ddp::jobs
