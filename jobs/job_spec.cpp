#include "jobs/job_spec.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <set>
#include <tuple>

#include "common/env_contract.hpp"
#include "common/user_regex.hpp"

namespace ddp::jobs {

namespace {

std::string format_problems(const std::string& file, const std::vector<SpecProblem>& problems) {
  std::string out;
  for (const auto& p : problems) {
    if (!out.empty()) out += "\n";
    if (p.line > 0) {
      out += fmt::format("{}:{}:{}: {}", file, p.line, p.column, p.message);
    } else {
      out += fmt::format("{}: {}", file, p.message);
    }
  }
  return out;
}

const char* kind_name(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "nothing";
  }
}

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
    auto v = scalar<double>(n, what, std::string(kDurationForms),
                            [](const std::string& s) { return parse_duration(s); });
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

bool valid_name(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  if (!std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

bool valid_env_name(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

std::optional<ExitCodeRange> parse_exit_range(const std::string& s) {
  auto parse_int = [](const std::string& t) -> std::optional<int> {
    if (t.empty() || t.size() > 3 || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    int v = std::stoi(t);
    if (v > 255) return std::nullopt;
    return v;
  };
  auto dash = s.find('-');
  if (dash == std::string::npos) {
    auto v = parse_int(s);
    if (!v) return std::nullopt;
    return ExitCodeRange{*v, *v};
  }
  auto a = parse_int(s.substr(0, dash));
  auto b = parse_int(s.substr(dash + 1));
  if (!a || !b || *a > *b) return std::nullopt;
  return ExitCodeRange{*a, *b};
}

std::string format_seconds(double s) {
  if (s == std::floor(s)) return fmt::format("{}", static_cast<long long>(s));
  return fmt::format("{}", s);
}

// Position (1-based line and column) of byte `offset` of `text`.
SpecProblem problem_at(std::string_view text, std::size_t offset, std::string message) {
  auto before = text.substr(0, offset);
  int line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  auto nl = before.rfind('\n');
  int column = static_cast<int>(nl == std::string_view::npos ? offset + 1 : offset - nl);
  return {line, column, std::move(message)};
}

// What yaml-cpp accepts silently: a key given twice (one value would win unseen) and a NUL in a
// value (it would cut an argv item, a variable or a name short where the job runs).
void check_keys_and_scalars(const YAML::Node& node, std::vector<SpecProblem>& problems) {
  auto at = [&](const YAML::Node& n, std::string message) {
    auto m = n.Mark();
    problems.push_back({m.is_null() ? 0 : m.line + 1, m.is_null() ? 0 : m.column + 1, std::move(message)});
  };
  if (node.IsScalar() && node.Scalar().find('\0') != std::string::npos) {
    at(node, "this value holds a NUL character (\\0), which no argument, variable or name can carry");
  } else if (node.IsSequence()) {
    for (const auto& item : node) check_keys_and_scalars(item, problems);
  } else if (node.IsMap()) {
    std::map<std::string, YAML::Mark> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
      check_keys_and_scalars(it->first, problems);
      check_keys_and_scalars(it->second, problems);
      if (!it->first.IsScalar()) continue;
      auto [first, fresh] = seen.emplace(it->first.Scalar(), it->first.Mark());
      if (!fresh) {
        at(it->first, fmt::format("duplicate key '{}' (first given at line {}, column {}); keep one of them",
                                  it->first.Scalar(), first->second.line + 1, first->second.column + 1));
      }
    }
  }
}

// `run --global-batch` refuses a batch its ranks cannot split evenly: say so at submit, in the
// job file's terms, rather than as a run that fails at its start.
std::optional<std::string> batch_split_problem(const JobSpec& spec) {
  const auto& d = spec.distributed;
  long world = static_cast<long>(spec.resources.nodes) * spec.resources.nproc_per_node;
  if (d.batch_policy != BatchPolicy::GlobalBatch || d.batch_size <= 0 || d.batch_size % world == 0) {
    return std::nullopt;
  }
  long below = d.batch_size / world * world;
  std::string sizes = below > 0 ? fmt::format("{} or {}", below, below + world) : std::to_string(world);
  return fmt::format(
      "distributed.batch_size {} cannot be split evenly across {} ranks (resources.nodes × nproc_per_node): use {}, "
      "or batch_policy: per_rank_batch to keep each rank's batch",
      d.batch_size, world, sizes);
}

}  // namespace

JobSpecError::JobSpecError(std::string file, std::vector<SpecProblem> problems)
    : UsageError(format_problems(file, problems)),
      message_(format_problems(file, problems)),
      file_(std::move(file)),
      problems_(std::move(problems)) {}

std::vector<std::string> JobSpec::worker_argv() const {
  if (!shell.empty()) return {"/bin/sh", "-c", shell};
  auto argv = command;
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

JobSpec parse_job_spec(std::string_view yaml, const std::string& file) {
  // YAML allows no NUL byte, and yaml-cpp would end the document there without a word.
  if (auto nul = yaml.find('\0'); nul != std::string_view::npos) {
    throw JobSpecError(file, {problem_at(yaml, nul,
                                         "a NUL byte: a job file is YAML text (is this a binary file, or "
                                         "UTF-16? save it as UTF-8)")});
  }
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::ParserException& e) {
    throw JobSpecError(file, {{e.mark.line + 1, e.mark.column + 1, "not valid YAML: " + e.msg}});
  }
  JobSpec spec;
  Reader r;
  if (!root.IsMap()) {
    throw JobSpecError(file,
                       {{1, 1, "a job file is a YAML mapping with at least name: and command: (see jobs/README.md)"}});
  }
  check_keys_and_scalars(root, r.problems);
  bool has_command = false;
  r.map(
      root, "the job",
      {
          {"apiVersion",
           [&](const YAML::Node& n) {
             if (auto v = r.choice(n, "apiVersion", {"ddp/v1"})) spec.api_version = *v;
           }},
          {"name",
           [&](const YAML::Node& n) {
             auto v = r.string(n, "name", "a name of letters, digits, '-', '_' or '.' (at most 63)");
             if (v && !valid_name(*v)) {
               r.problem(n, fmt::format("name '{}' must start with a letter or digit and hold only letters, digits, "
                                        "'-', '_' or '.' (at most 63)",
                                        *v));
             } else if (v) {
               spec.name = *v;
             }
           }},
          {"command",
           [&](const YAML::Node& n) {
             has_command = true;
             if (n.IsScalar()) {
               r.problem(n,
                         "command must be an argv list, e.g. [/usr/bin/python3, train.py]; to run a string through "
                         "/bin/sh say so with shell: '...' instead of command:");
               return;
             }
             if (auto v = r.strings(n, "command", "[/usr/bin/python3, train.py]")) {
               if (v->empty()) {
                 r.problem(n, "command must hold at least the program, e.g. [/usr/bin/python3, train.py]");
               } else if (v->front().empty() || v->front()[0] == '-') {
                 r.problem(n, fmt::format("command must start with the program to run, not '{}'", v->front()));
               }
               spec.command = *v;
             }
           }},
          {"shell",
           [&](const YAML::Node& n) {
             if (auto v = r.string(n, "shell", "a command line for /bin/sh -c")) {
               if (v->empty()) r.problem(n, "shell must not be empty");
               spec.shell = *v;
             }
           }},
          {"args",
           [&](const YAML::Node& n) {
             if (auto v = r.strings(n, "args", "[--epochs, '10']")) spec.args = *v;
           }},
          {"workdir",
           [&](const YAML::Node& n) {
             if (auto v = r.string(n, "workdir", "an absolute directory path")) {
               if (v->empty() || (*v)[0] != '/') {
                 r.problem(n, fmt::format("workdir must be an absolute path, not '{}'", *v));
               } else {
                 spec.workdir = *v;
               }
             }
           }},
          {"env",
           [&](const YAML::Node& n) {
             if (!n.IsMap()) {
               r.problem(n, fmt::format("env must be a mapping NAME: value, not {}", kind_name(n)));
               return;
             }
             for (auto it = n.begin(); it != n.end(); ++it) {
               auto key = it->first.IsScalar() ? it->first.Scalar() : "";
               if (!valid_env_name(key)) {
                 r.problem(it->first, fmt::format("env: '{}' is not a variable name ([A-Za-z_][A-Za-z0-9_]*)", key));
                 continue;
               }
               if (auto v = r.string(it->second, "env." + key, "a string, number or boolean")) spec.env[key] = *v;
             }
           }},
          {"resources",
           [&](const YAML::Node& n) {
             r.map(n, "resources",
                   {
                       {"nodes",
                        [&](const YAML::Node& v) {
                          if (auto x = r.integer(v, "resources.nodes", 1, 4096))
                            spec.resources.nodes = static_cast<int>(*x);
                        }},
                       {"nproc_per_node",
                        [&](const YAML::Node& v) {
                          if (auto x = r.integer(v, "resources.nproc_per_node", 1, 1024)) {
                            spec.resources.nproc_per_node = static_cast<int>(*x);
                          }
                        }},
                       {"gpus_per_node",
                        [&](const YAML::Node& v) {
                          if (auto x = r.integer(v, "resources.gpus_per_node", 0, 1024)) {
                            spec.resources.gpus_per_node = static_cast<int>(*x);
                          }
                        }},
                   });
           }},
          {"distributed",
           [&](const YAML::Node& n) {
             auto& d = spec.distributed;
             r.map(n, "distributed",
                   {
                       {"backend",
                        [&](const YAML::Node& v) {
                          if (auto x = r.choice(v, "distributed.backend", {"gloo", "nccl"})) d.backend = *x;
                        }},
                       {"store",
                        [&](const YAML::Node& v) {
                          if (auto x = r.choice(v, "distributed.store", {"agent", "rank0", "file"})) d.store = *x;
                        }},
                       {"max_restarts",
                        [&](const YAML::Node& v) {
                          if (auto x = r.integer(v, "distributed.max_restarts", 0, 1000))
                            d.max_restarts = static_cast<int>(*x);
                        }},
                       {"shutdown_grace",
                        [&](const YAML::Node& v) {
                          if (auto x = r.duration(v, "distributed.shutdown_grace", kShutdownGraceRange))
                            d.shutdown_grace_s = *x;
                        }},
                       {"batch_policy",
                        [&](const YAML::Node& v) {
                          if (auto x = r.choice(v, "distributed.batch_policy", {"global_batch", "per_rank_batch"})) {
                            d.batch_policy =
                                *x == "global_batch" ? BatchPolicy::GlobalBatch : BatchPolicy::PerRankBatch;
                          }
                        }},
                       {"batch_size",
                        [&](const YAML::Node& v) {
                          if (auto x = r.integer(v, "distributed.batch_size", 1, 1 << 30))
                            d.batch_size = static_cast<int>(*x);
                        }},
                   });
             if (n.IsMap() && (d.batch_policy != BatchPolicy::None) != (d.batch_size > 0)) {
               r.problem(n,
                         "distributed: batch_policy and batch_size go together, e.g. batch_policy: global_batch "
                         "with batch_size: 256");
             }
           }},
          {"restart",
           [&](const YAML::Node& n) {
             auto& rs = spec.restart;
             r.map(n, "restart",
                   {
                       {"policy",
                        [&](const YAML::Node& v) {
                          if (auto x = r.choice(v, "restart.policy", {"never", "on-failure", "exit-code"})) {
                            rs.policy = *x == "never"        ? RestartPolicy::Never
                                        : *x == "on-failure" ? RestartPolicy::OnFailure
                                                             : RestartPolicy::ExitCode;
                          }
                        }},
                       {"max_retries",
                        [&](const YAML::Node& v) {
                          if (auto x = r.integer(v, "restart.max_retries", 0, 1000))
                            rs.max_retries = static_cast<int>(*x);
                        }},
                       {"backoff",
                        [&](const YAML::Node& v) {
                          r.map(v, "restart.backoff",
                                {
                                    {"initial",
                                     [&](const YAML::Node& b) {
                                       if (auto x = r.duration(b, "restart.backoff.initial", kBackoffRange))
                                         rs.backoff_initial_s = *x;
                                     }},
                                    {"max",
                                     [&](const YAML::Node& b) {
                                       if (auto x = r.duration(b, "restart.backoff.max", kBackoffRange))
                                         rs.backoff_max_s = *x;
                                     }},
                                    {"factor",
                                     [&](const YAML::Node& b) {
                                       if (auto x = r.number(b, "restart.backoff.factor", 1)) rs.backoff_factor = *x;
                                     }},
                                });
                        }},
                       {"retryable_exit_codes",
                        [&](const YAML::Node& v) {
                          if (!v.IsSequence()) {
                            r.problem(
                                v, fmt::format("restart.retryable_exit_codes must be a list of codes or ranges, e.g. "
                                               "[1, 128-255], not {}",
                                               kind_name(v)));
                            return;
                          }
                          rs.retryable_exit_codes.clear();
                          for (const auto& item : v) {
                            auto range = item.IsScalar() ? parse_exit_range(item.Scalar()) : std::nullopt;
                            if (!range) {
                              r.problem(item, fmt::format(
                                                  "restart.retryable_exit_codes: '{}' is not a code 0..255 or a range "
                                                  "such as 128-255",
                                                  item.IsScalar() ? item.Scalar() : kind_name(item)));
                            } else {
                              rs.retryable_exit_codes.push_back(*range);
                            }
                          }
                        }},
                       {"no_retry_log_patterns",
                        [&](const YAML::Node& v) {
                          if (!v.IsSequence()) {
                            r.problem(v, fmt::format("restart.no_retry_log_patterns must be a list of regexes, e.g. "
                                                     "['CUDA out of memory'], not {}",
                                                     kind_name(v)));
                            return;
                          }
                          for (const auto& item : v) {
                            if (auto x = r.regex(item, "restart.no_retry_log_patterns item", 0)) {
                              rs.no_retry_log_patterns.push_back(*x);
                            }
                          }
                        }},
                   });
           }},
          {"limits",
           [&](const YAML::Node& n) {
             r.map(n, "limits",
                   {
                       {"timeout",
                        [&](const YAML::Node& v) {
                          if (auto x = r.duration(v, "limits.timeout", kTimeoutRange)) spec.timeout_s = *x;
                        }},
                   });
           }},
          {"priority",
           [&](const YAML::Node& n) {
             if (auto x = r.integer(n, "priority (higher runs first)", -1000, 1000))
               spec.priority = static_cast<int>(*x);
           }},
          {"metrics",
           [&](const YAML::Node& n) {
             if (!n.IsMap()) {
               r.problem(n,
                         fmt::format("metrics must be a mapping name: 'regex with one (group)', not {}", kind_name(n)));
               return;
             }
             for (auto it = n.begin(); it != n.end(); ++it) {
               auto key = it->first.IsScalar() ? it->first.Scalar() : "";
               if (!valid_env_name(key)) {
                 r.problem(it->first, fmt::format("metrics: '{}' is not a metric name ([A-Za-z_][A-Za-z0-9_]*)", key));
                 continue;
               }
               if (auto x = r.regex(it->second, "metrics." + key, 1)) spec.metrics[key] = *x;
             }
           }},
          {"executor",
           [&](const YAML::Node& n) {
             if (auto v = r.choice(n, "executor", {"local", "slurm"})) spec.executor = *v;
           }},
          {"slurm",
           [&](const YAML::Node& n) {
             auto& sl = spec.slurm;
             auto name_field = [&](const YAML::Node& v, const std::string& what, std::string& into) {
               auto x = r.string(v, what, "a Slurm name (letters, digits, - _ .)");
               if (!x) return;
               if (x->empty() || !std::all_of(x->begin(), x->end(), [](char c) {
                     return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                   })) {
                 r.problem(v,
                           fmt::format("{} '{}' must be a Slurm name of letters, digits, '-', '_' or '.'", what, *x));
                 return;
               }
               into = *x;
             };
             r.map(n, "slurm",
                   {
                       {"partition", [&](const YAML::Node& v) { name_field(v, "slurm.partition", sl.partition); }},
                       {"account", [&](const YAML::Node& v) { name_field(v, "slurm.account", sl.account); }},
                       {"qos", [&](const YAML::Node& v) { name_field(v, "slurm.qos", sl.qos); }},
                       {"time_limit",
                        [&](const YAML::Node& v) {
                          if (auto x = r.duration(v, "slurm.time_limit", kSlurmTimeLimitRange)) sl.time_limit_s = *x;
                        }},
                       {"sbatch_args",
                        [&](const YAML::Node& v) {
                          auto x = r.strings(v, "slurm.sbatch_args", "[--exclusive, --mem=8G]");
                          if (!x) return;
                          // Set by the daemon: the job's shape, name and output file must stay its own.
                          static const std::vector<std::pair<std::string, std::string>> owned = {
                              {"--nodes", "resources.nodes"},
                              {"-N", "resources.nodes"},
                              {"--output", "(the daemon's run directory)"},
                              {"-o", "(the daemon's run directory)"},
                              {"--error", "(the daemon's run directory)"},
                              {"-e", "(the daemon's run directory)"},
                              {"--job-name", "name"},
                              {"-J", "name"},
                              {"--ntasks-per-node", "(one supervisor per node)"},
                              {"--partition", "slurm.partition"},
                              {"-p", "slurm.partition"},
                              {"--time", "slurm.time_limit"},
                              {"-t", "slurm.time_limit"},
                              {"--chdir", "workdir"},
                              {"-D", "workdir"},
                              {"--wrap", "command"},
                          };
                          std::size_t i = 0;
                          for (const auto& arg : *x) {
                            const auto& at = v[i++];
                            if (arg.empty() || arg[0] != '-' || arg.find_first_of("\r\n") != std::string::npos) {
                              r.problem(at, fmt::format("slurm.sbatch_args: '{}' is not one sbatch option such as "
                                                        "--exclusive or --mem=8G",
                                                        arg));
                              continue;
                            }
                            for (const auto& [opt, field] : owned) {
                              bool hit = arg == opt || arg.rfind(opt + "=", 0) == 0 ||
                                         (opt.size() == 2 && arg.size() > 2 && arg.rfind(opt, 0) == 0 && arg[1] != '-');
                              if (hit) {
                                r.problem(at, fmt::format("slurm.sbatch_args: {} is set by the daemon; use {} instead",
                                                          opt, field));
                                break;
                              }
                            }
                            sl.sbatch_args.push_back(arg);
                          }
                        }},
                   });
           }},
      });
  if (spec.name.empty() && !root["name"]) r.problems.push_back({1, 1, "missing name: (e.g. name: resnet-ddp)"});
  if (!spec.shell.empty() && has_command) {
    r.problem(root["shell"], "give either command: (an argv list) or shell: (a /bin/sh command line), not both");
  } else if (spec.shell.empty() && !has_command && !root["shell"]) {
    r.problems.push_back({1, 1, "missing command: (an argv list, e.g. command: [/usr/bin/python3, train.py])"});
  }
  if (!spec.shell.empty() && !spec.args.empty()) {
    r.problem(root["args"], "args: go with command:, not with shell: (put them in the shell line)");
  }
  if (spec.executor != "slurm") {
    if (spec.resources.nodes > 1) {
      r.problem(root["resources"]["nodes"],
                fmt::format("resources.nodes {}: a local job runs on this host alone (nodes: 1); several nodes need "
                            "executor: slurm",
                            spec.resources.nodes));
    }
    if (root["slurm"]) r.problem(root["slurm"], "slurm: applies to executor: slurm only; add executor: slurm");
  }
  if (auto why = batch_split_problem(spec)) r.problem(root["distributed"]["batch_size"], *why);
  if (spec.restart.backoff_max_s < spec.restart.backoff_initial_s && root["restart"]) {
    r.problem(root["restart"], "restart.backoff.max must be at least restart.backoff.initial");
  }
  if (!r.problems.empty()) {
    std::stable_sort(r.problems.begin(), r.problems.end(), [](const SpecProblem& a, const SpecProblem& b) {
      return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    throw JobSpecError(file, std::move(r.problems));
  }
  return spec;
}

namespace {

// The `ddp-launch run` options every executor passes: the ranks, restarts, store and backend.
// The batch policy is `run`'s own (--global-batch / --per-rank-batch): the ranks see the same
// DDP_GLOBAL_BATCH, DDP_PER_RANK_BATCH and DDP_LR_SCALE as under `ddp-launch run`.
std::vector<std::string> group_options(const JobSpec& spec) {
  const auto& d = spec.distributed;
  std::vector<std::string> out = {
      "--nproc-per-node", std::to_string(spec.resources.nproc_per_node),
      "--max-restarts",   std::to_string(d.max_restarts),
      "--shutdown-grace", format_seconds(d.shutdown_grace_s),
      "--store",          d.store,
      "--backend",        d.backend,
  };
  if (d.batch_policy == BatchPolicy::GlobalBatch)
    out.insert(out.end(), {"--global-batch", std::to_string(d.batch_size)});
  if (d.batch_policy == BatchPolicy::PerRankBatch) {
    out.insert(out.end(), {"--per-rank-batch", std::to_string(d.batch_size)});
  }
  return out;
}

}  // namespace

std::vector<std::string> launch_argv(const JobSpec& spec, const LaunchContext& ctx) {
  std::vector<std::string> argv = {ctx.self_exe, "run", "--nnodes", std::to_string(spec.resources.nodes)};
  auto group = group_options(spec);
  argv.insert(argv.end(), group.begin(), group.end());
  argv.insert(argv.end(), {
                              "--rdzv-id",
                              "job-" + ctx.job_id,
                              "--log-dir",
                              ctx.log_dir.string(),
                              // Ranks' output goes to their files only: the supervisor's own log stays readable.
                              "--redirects",
                              "3",
                              "--events",
                              ctx.events_path.string(),
                          });
  // The supervisor records them in its run directory's metrics.csv (`ddp-launch report`).
  for (const auto& [name, regex] : spec.metrics) argv.insert(argv.end(), {"--metric", name + "=" + regex});
  // No "--": `run` takes everything from the first positional on as the worker's argv.
  argv.push_back("--no-python");
  auto worker = spec.worker_argv();
  argv.insert(argv.end(), worker.begin(), worker.end());
  return argv;
}

std::string slurm_time(double seconds) {
  auto total = static_cast<long long>(std::ceil(seconds));
  return fmt::format("{}-{:02}:{:02}:{:02}", total / 86400, total % 86400 / 3600, total % 3600 / 60, total % 60);
}

launcher::SbatchScript slurm_batch_script(const JobSpec& spec, const LaunchContext& ctx, const std::string& output) {
  launcher::SbatchScript s;
  s.job_name = fmt::format("ddp-{}-{}", ctx.job_id, spec.name);
  s.nodes = std::to_string(spec.resources.nodes);
  s.output = output;
  if (spec.slurm.time_limit_s) s.time = slurm_time(*spec.slurm.time_limit_s);
  s.partition = spec.slurm.partition;
  s.account = spec.slurm.account;
  s.qos = spec.slurm.qos;
  s.chdir = spec.workdir;
  if (spec.resources.gpus_per_node > 0)
    s.extra.push_back(fmt::format("--gpus-per-node={}", spec.resources.gpus_per_node));
  s.extra.insert(s.extra.end(), spec.slurm.sbatch_args.begin(), spec.slurm.sbatch_args.end());
  s.launcher = ctx.self_exe;
  // Node count, node rank, store host and port, and the run id (the Slurm job id) come from
  // SLURM_* on every node. No --log-dir/--events: every node's supervisor would write the same
  // files; the ranks' [rank N]-prefixed output reaches the job's output file through srun.
  s.run_options = group_options(spec);
  s.run_options.push_back("--no-python");
  s.command = spec.worker_argv();
  s.env = launch_env(spec, ctx);
  // Slurm hands out the GPUs (CUDA_VISIBLE_DEVICES per node from its gres); never override them.
  s.env.erase(std::string(env::kCudaVisibleDevices));
  s.env.erase(std::string(env::kCudaDeviceOrder));
  return s;
}

std::map<std::string, std::string> launch_env(const JobSpec& spec, const LaunchContext& ctx) {
  std::map<std::string, std::string> env;
  env[std::string(env::kPythonUnbuffered)] = "1";  // or Python's output reaches the logs late
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::string gpus;
  for (int g : ctx.gpu_indices) gpus += (gpus.empty() ? "" : ",") + std::to_string(g);
  // Always set: a job without GPUs must not see (and grab) the host's.
  env[std::string(env::kCudaVisibleDevices)] = gpus;
  if (!ctx.gpu_indices.empty()) env[std::string(env::kCudaDeviceOrder)] = "PCI_BUS_ID";  // NVML's numbering
  env[std::string(env::kJobId)] = ctx.job_id;
  return env;
}

}  // namespace ddp::jobs
