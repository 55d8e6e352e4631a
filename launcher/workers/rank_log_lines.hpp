#pragma once
// How a rank's output lines are labelled and copied, as torchrun ≥ 2.x does it:
// - the console prefix: `[rank N]: ` (one node) / `[host:rank]: ` (several), or
//   $TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE expanded per rank like torch's
//   string.Template(...).safe_substitute(role_name=, rank=, local_rank=): `$name` and `${name}`
//   are replaced, `$$` is a `$`, anything else (an unknown name) stays as written;
// - --duplicate-stdout-filters / --duplicate-stderr-filters: a line containing any of the
//   substrings is also written, with its prefix, to attempt_N/filtered_stdout.log /
//   filtered_stderr.log in the run directory (launcher/outputs/filtered_log_writer.hpp writes them).
// Pure: values in, values out.
#include <string>
#include <string_view>
#include <vector>

#include "launcher/workers/rank_plan.hpp"

namespace ddp::launcher {

// Substitutes role_name, rank and local_rank (torch's names).
std::string expand_line_prefix(std::string_view tmpl, const RankAssignment& ranks);
// The `$name`/`${name}` references the expansion leaves as written, in order, each once.
std::vector<std::string> unknown_line_prefix_names(std::string_view tmpl);

// What precedes every console (and filtered-file) line of this rank.
std::string rank_line_prefix(std::string_view tmpl, const RankAssignment& ranks, bool multi_node,
                             std::string_view node_name);

// torchrun's comma_separated_list: "a,b" → {a, b}; ",," is a literal comma. Empty items match
// every line in torch; here they are dropped (`empty_dropped` says whether any was).
std::vector<std::string> split_duplicate_filters(std::string_view value, bool* empty_dropped = nullptr);

struct DuplicateFilters {
  std::vector<std::string> stdout_filters;
  std::vector<std::string> stderr_filters;
  bool any() const { return !stdout_filters.empty() || !stderr_filters.empty(); }
  // Whether a line of the rank's stderr (or stdout) goes to the filtered file.
  bool matches(std::string_view line, bool is_stderr) const;
};

// attempt_N/filtered_stdout.log or attempt_N/filtered_stderr.log, relative to the run directory.
std::string filtered_log_name(int attempt, bool is_stderr);

}  // namespace ddp::launcher
