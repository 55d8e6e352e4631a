#include "launcher/workers/rank_log_lines.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace ddp::launcher {

namespace {

bool id_start(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool id_char(char c) { return id_start(c) || (c >= '0' && c <= '9'); }

// One `$` reference at tmpl[i] (tmpl[i] == '$'): its name and length, as Python's string.Template
// reads it; nullopt for `$$` or a `$` that starts no reference (both handled by the caller).
struct Reference {
  std::string_view name;
  std::size_t length;
};
std::optional<Reference> reference_at(std::string_view tmpl, std::size_t i) {
  std::size_t j = i + 1;
  bool braced = j < tmpl.size() && tmpl[j] == '{';
  if (braced) ++j;
  if (j >= tmpl.size() || !id_start(tmpl[j])) return std::nullopt;
  std::size_t end = j;
  while (end < tmpl.size() && id_char(tmpl[end])) ++end;
  if (braced) {
    if (end >= tmpl.size() || tmpl[end] != '}') return std::nullopt;
    return Reference{tmpl.substr(j, end - j), end + 1 - i};
  }
  return Reference{tmpl.substr(j, end - j), end - i};
}

std::optional<std::string> value_of(std::string_view name, const RankAssignment& r) {
  if (name == "role_name") return r.role;
  if (name == "rank") return std::to_string(r.rank);
  if (name == "local_rank") return std::to_string(r.local_rank);
  return std::nullopt;
}

}  // namespace

std::string expand_line_prefix(std::string_view tmpl, const RankAssignment& ranks) {
  std::string out;
  for (std::size_t i = 0; i < tmpl.size();) {
    if (tmpl[i] != '$') {
      out += tmpl[i++];
      continue;
    }
    if (i + 1 < tmpl.size() && tmpl[i + 1] == '$') {
      out += '$';
      i += 2;
      continue;
    }
    auto ref = reference_at(tmpl, i);
    auto value = ref ? value_of(ref->name, ranks) : std::nullopt;
    if (!value) {  // safe_substitute: an unknown name or a lone `$` stays as written
      out += tmpl[i++];
      continue;
    }
    out += *value;
    i += ref->length;
  }
  return out;
}

std::vector<std::string> unknown_line_prefix_names(std::string_view tmpl) {
  std::vector<std::string> names;
  RankAssignment probe;
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '$') continue;
    if (i + 1 < tmpl.size() && tmpl[i + 1] == '$') {
      ++i;
      continue;
    }
    auto ref = reference_at(tmpl, i);
    if (!ref || value_of(ref->name, probe)) continue;
    std::string name(ref->name);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

std::string rank_line_prefix(std::string_view tmpl, const RankAssignment& ranks, bool multi_node,
                             std::string_view node_name) {
  if (!tmpl.empty()) return expand_line_prefix(tmpl, ranks);  // torch adds no separator either
  return multi_node ? fmt::format("[{}:{}]: ", node_name, ranks.rank) : fmt::format("[rank {}]: ", ranks.rank);
}

std::vector<std::string> split_duplicate_filters(std::string_view value, bool* empty_dropped) {
  std::vector<std::string> items;
  std::string item;
  bool dropped = false;
  auto close = [&] {
    if (item.empty()) {
      dropped = true;
    } else {
      items.push_back(std::move(item));
    }
    item.clear();
  };
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (value[i] != ',') {
      item += value[i];
    } else if (i + 1 < value.size() && value[i + 1] == ',') {
      item += ',';  // ",," escapes a comma (torchrun's rule)
      ++i;
    } else {
      close();
    }
  }
  if (!value.empty()) close();
  if (empty_dropped) *empty_dropped = dropped;
  return items;
}

bool DuplicateFilters::matches(std::string_view line, bool is_stderr) const {
  const auto& filters = is_stderr ? stderr_filters : stdout_filters;
  return std::any_of(filters.begin(), filters.end(),
                     [&](const std::string& f) { return line.find(f) != std::string_view::npos; });
}

std::string filtered_log_name(int attempt, bool is_stderr) {
  return fmt::format("attempt_{}/filtered_{}.log", attempt, is_stderr ? "stderr" : "stdout");
}

}  // namespace ddp::launcher
