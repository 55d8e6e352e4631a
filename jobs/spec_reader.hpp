#pragma once
// Reading a job file's YAML: a walker that records every problem with its line and column
// instead of stopping at the first, and the typed readers the field table (job_spec.cpp) uses.
// Internal to jobs/.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.hpp"
#include "common/user_regex.hpp"
#include "jobs/job_spec.hpp"

namespace ddp::jobs {

// "null", "a scalar", "a list", "a mapping": what a node is, for messages.
const char* kind_name(const YAML::Node& n);

// Walks the document, recording problems instead of stopping at the first one.
class Reader {
 public:
  std::vector<SpecProblem> problems;

  void problem(const YAML::Node& at, std::string message) {
    auto m = at.Mark();
    if (m.is_null()) {
      problems.push_back({0, 0, std::move(message)});
    } else {
      problems.push_back({m.line + 1, m.column + 1, std::move(message)});
    }
  }

  // Calls handler(key, value) for each known key; unknown keys are problems naming the known ones.
  void map(const YAML::Node& node, const std::string& where,
           const std::map<std::string, std::function<void(const YAML::Node&)>>& fields) {
    if (!node.IsMap()) {
      problem(node, fmt::format("{} must be a mapping (key: value lines), not {}", where, kind_name(node)));
      return;
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (!it->first.IsScalar()) {
        problem(it->first, fmt::format("{}: keys must be plain names", where));
        continue;
      }
      auto key = it->first.Scalar();
      auto f = fields.find(key);
      if (f == fields.end()) {
        std::string known;
        for (const auto& [k, _] : fields) known += (known.empty() ? "" : ", ") + k;
        problem(it->first, fmt::format("unknown key '{}' in {}; expected one of: {}", key, where, known));
        continue;
      }
      f->second(it->second);
    }
  }

  std::optional<std::string> string(const YAML::Node& n, const std::string& what, const std::string& expected) {
    if (!n.IsScalar()) {
      problem(n, fmt::format("{} must be {}, not {}", what, expected, kind_name(n)));
      return std::nullopt;
    }
    return n.Scalar();
  }

  // A scalar read by parse (nullopt, or a std:: conversion's exception: not that form); one
  // problem naming the expected form otherwise.
  template <typename T, typename Parse>
  std::optional<T> scalar(const YAML::Node& n, const std::string& what, const std::string& expected, Parse parse) {
    auto text = string(n, what, expected);
    if (!text) return std::nullopt;
    try {
      if (std::optional<T> v = parse(*text)) return v;
    } catch (const std::exception&) {
    }
    problem(n, fmt::format("{} must be {}, not '{}'", what, expected, *text));
    return std::nullopt;
  }

  std::optional<long long> integer(const YAML::Node& n, const std::string& what, long long lo, long long hi) {
    return scalar<long long>(n, what, fmt::format("an integer from {} to {}", lo, hi),
                             [&](const std::string& s) -> std::optional<long long> {
                               std::size_t used = 0;
                               long long v = std::stoll(s, &used);
                               if (used == s.size() && v >= lo && v <= hi) return v;
                               return std::nullopt;
                             });
  }

  std::optional<double> number(const YAML::Node& n, const std::string& what, double lo) {
    return scalar<double>(n, what, fmt::format("a number ≥ {}", lo),
                          [&](const std::string& s) -> std::optional<double> {
                            std::size_t used = 0;
                            double v = std::stod(s, &used);
                            if (used == s.size() && std::isfinite(v) && v >= lo) return v;
                            return std::nullopt;
                          });
  }

  // A duration inside `range` (the daemon's timers count milliseconds in 64 bits: a bounded value
  // cannot overflow into "expired at once").
  std::optional<double> duration(const YAML::Node& n, const std::string& what, DurationRange range) {
    auto v =
        scalar<double>(n, what, std::string(kDurationForms), [](const std::string& s) { return parse_duration(s); });
    if (!v) return std::nullopt;
    if (auto why = duration_range_problem(*v, range)) {
      problem(n, fmt::format("{} {}, not '{}'", what, *why, n.Scalar()));
      return std::nullopt;
    }
    return v;
  }

  std::optional<std::vector<std::string>> strings(const YAML::Node& n, const std::string& what, const char* example) {
    if (!n.IsSequence()) {
      problem(n, fmt::format("{} must be a list of strings, e.g. {}, not {}", what, example, kind_name(n)));
      return std::nullopt;
    }
    std::vector<std::string> out;
    for (const auto& item : n) {
      if (!item.IsScalar()) {
        problem(item, fmt::format("{}: every item must be a string, not {}", what, kind_name(item)));
        return std::nullopt;
      }
      out.push_back(item.Scalar());
    }
    return out;
  }

  std::optional<std::string> choice(const YAML::Node& n, const std::string& what, std::vector<std::string> allowed) {
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : " | ") + a;
    auto s = string(n, what, list.c_str());
    if (!s) return std::nullopt;
    if (std::find(allowed.begin(), allowed.end(), *s) == allowed.end()) {
      problem(n, fmt::format("{} must be one of {}, not '{}'", what, list, *s));
      return std::nullopt;
    }
    return s;
  }

  // A regex checked to compile (RE2, as the daemon applies it: common/user_regex.hpp); `groups`
  // capture groups at least.
  std::optional<std::string> regex(const YAML::Node& n, const std::string& what, unsigned groups) {
    auto s = string(n, what, "a regular expression (RE2 syntax)");
    if (!s) return std::nullopt;
    UserRegex re(*s);
    if (!re.ok()) {
      problem(n, fmt::format("{} is not a valid regular expression: {} (RE2 syntax: no backreferences or lookaround)",
                             what, re.error()));
      return std::nullopt;
    }
    if (re.groups() < static_cast<int>(groups)) {
      problem(n, fmt::format("{} must have a capture group around the number, e.g. 'loss=([0-9.eE+-]+)'", what));
      return std::nullopt;
    }
    return s;
  }
};

// Position (1-based line and column) of byte `offset` of `text`.
SpecProblem problem_at(std::string_view text, std::size_t offset, std::string message);

// What yaml-cpp accepts silently: a key given twice (one value would win unseen) and a NUL in a
// value (it would cut an argv item, a variable or a name short where the job runs).
void check_keys_and_scalars(const YAML::Node& node, std::vector<SpecProblem>& problems);

// What a job file must not hold before yaml-cpp builds its node tree: an anchor or an alias
// (`&a`, `*a`: an alias may point at its own parent, a cycle every walk of the tree follows forever,
// and nested aliases expand exponentially, "billion laughs"), or nesting deeper than any job file
// needs (kMaxJobNesting). Read with yaml-cpp's event parser, which reports an alias once, unexpanded.
// The first such place, or nullopt.
inline constexpr int kMaxJobNesting = 32;
std::optional<SpecProblem> structure_problem(const std::string& yaml);

}  // namespace ddp::jobs
