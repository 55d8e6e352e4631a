#include "jobs/job_spec.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <functional>
#include <tuple>

#include "common/user_regex.hpp"
#include "jobs/spec_reader.hpp"
#include "launcher/run/host_facts.hpp"
#include "launcher/run/run_option_table.hpp"
#include "launcher/run/run_options.hpp"
#include "platform/programs.hpp"

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

// A run option's key as the job file gave it: the text its flag takes, and where it stands.
struct GivenRunKey {
  const launcher::RunOption* option;
  std::string value;
  YAML::Node at;
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
  if (!shell.empty()) return platform::shell_command(shell);  // /bin/sh -c; Windows: cmd.exe /c
  auto argv = command;
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

namespace {

void read_name(Reader& r, const YAML::Node& n, JobSpec& spec) {
  auto v = r.string(n, "name", "a name of letters, digits, '-', '_' or '.' (at most 63)");
  if (v && !valid_name(*v)) {
    r.problem(n, fmt::format("name '{}' must start with a letter or digit and hold only letters, digits, "
                             "'-', '_' or '.' (at most 63)",
                             *v));
  } else if (v) {
    spec.name = *v;
  }
}

void read_command(Reader& r, const YAML::Node& n, JobSpec& spec) {
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
}

// A mapping whose keys are names ([A-Za-z_][A-Za-z0-9_]*: env's variables, metrics' names); every
// bad key is a problem, and `read` takes each good key with its value. `shape` shows an entry,
// `key_kind` says what a key is.
void read_named_entries(Reader& r, const YAML::Node& n, const std::string& section, std::string_view shape,
                        std::string_view key_kind,
                        const std::function<void(const std::string&, const YAML::Node&)>& read) {
  if (!n.IsMap()) {
    r.problem(n, fmt::format("{} must be a mapping {}, not {}", section, shape, kind_name(n)));
    return;
  }
  for (auto it = n.begin(); it != n.end(); ++it) {
    auto key = it->first.IsScalar() ? it->first.Scalar() : "";
    if (!valid_env_name(key)) {
      r.problem(it->first, fmt::format("{}: '{}' is not a {} ([A-Za-z_][A-Za-z0-9_]*)", section, key, key_kind));
      continue;
    }
    read(key, it->second);
  }
}

void read_env(Reader& r, const YAML::Node& n, JobSpec& spec) {
  read_named_entries(r, n, "env", "NAME: value", "variable name", [&](const std::string& key, const YAML::Node& v) {
    if (auto x = r.string(v, "env." + key, "a string, number or boolean")) spec.env[key] = *x;
  });
}

// The launcher's option-table row of a job key's run option.
const launcher::RunOption& run_option(std::string_view flag) {
  const auto* o = launcher::find_run_option(flag);
  if (!o) throw Error(fmt::format("{} is not in the run option table", flag));
  return *o;
}

void read_resources(Reader& r, const YAML::Node& n, JobSpec& spec) {
  // Counts only: the daemon's scheduler counts CPU slots and nodes (run also takes cpu, gpu, auto, MIN:MAX).
  auto count = [&](const char* flag, int& into) {
    const auto& o = run_option(flag);
    return [&r, &o, &into](const YAML::Node& v) {
      if (auto x = r.integer(v, std::string(o.job_key), static_cast<long long>(o.range->min),
                             static_cast<long long>(o.range->max))) {
        into = static_cast<int>(*x);
      }
    };
  };
  r.map(n, "resources",
        {
            {"nodes", count("--nnodes", spec.resources.nodes)},
            {"nproc_per_node", count("--nproc-per-node", spec.resources.nproc_per_node)},
            {"gpus_per_node",
             [&](const YAML::Node& v) {
               if (auto x = r.integer(v, "resources.gpus_per_node", 0, 1024)) {
                 spec.resources.gpus_per_node = static_cast<int>(*x);
               }
             }},
        });
}

// What a run option's value looks like, for "must be ..." when the key holds no scalar.
std::string expected_form(const launcher::RunOption& o) {
  using launcher::OptionType;
  switch (o.type) {
    case OptionType::Choice: return launcher::choices_text(o);
    case OptionType::Duration:
      return o.choices.empty() ? std::string(kDurationForms)
                               : fmt::format("{} or {}", launcher::choices_text(o), kDurationForms);
    case OptionType::Integer: return "an integer";
    default: return "a value";
  }
}

// distributed: one key per row of the option table whose job_key is distributed.<key>, read as the
// text its flag takes (checked by run itself: check_run_keys), and batch_policy + batch_size, which
// become run's --global-batch or --per-rank-batch.
void read_distributed(Reader& r, const YAML::Node& n, JobSpec& spec, std::vector<GivenRunKey>& given) {
  auto& d = spec.distributed;
  std::vector<std::string> policies;
  for (const auto& o : launcher::run_option_table()) {
    if (o.job_form == launcher::JobForm::BatchPolicy) policies.emplace_back(o.job_key);
  }
  std::map<std::string, std::function<void(const YAML::Node&)>> fields = {
      {"batch_policy",
       [&](const YAML::Node& v) {
         if (auto x = r.choice(v, "distributed.batch_policy", policies)) {
           d.batch_policy = *x == "global_batch" ? BatchPolicy::GlobalBatch : BatchPolicy::PerRankBatch;
         }
       }},
      {"batch_size",
       [&](const YAML::Node& v) {
         const auto& range = *run_option("--global-batch").range;
         if (auto x = r.integer(v, "distributed.batch_size", static_cast<long long>(range.min),
                                static_cast<long long>(range.max))) {
           d.batch_size = static_cast<int>(*x);
         }
       }},
  };
  constexpr std::string_view kPrefix = "distributed.";
  for (const auto& o : launcher::run_option_table()) {
    if (o.job_form != launcher::JobForm::Scalar || o.job_key.substr(0, kPrefix.size()) != kPrefix) continue;
    fields[std::string(o.job_key.substr(kPrefix.size()))] = [&r, &given, &o](const YAML::Node& v) {
      if (auto x = r.string(v, std::string(o.job_key), expected_form(o))) given.push_back({&o, *x, v});
    };
  }
  r.map(n, "distributed", fields);
  if (n.IsMap() && (d.batch_policy != BatchPolicy::None) != (d.batch_size > 0)) {
    r.problem(n,
              "distributed: batch_policy and batch_size go together, e.g. batch_policy: global_batch "
              "with batch_size: 256");
  }
}

void read_backoff(Reader& r, const YAML::Node& n, JobRestart& rs) {
  r.map(n, "restart.backoff",
        {
            {"initial",
             [&](const YAML::Node& b) {
               if (auto x = r.duration(b, "restart.backoff.initial", kBackoffRange)) rs.backoff_initial_s = *x;
             }},
            {"max",
             [&](const YAML::Node& b) {
               if (auto x = r.duration(b, "restart.backoff.max", kBackoffRange)) rs.backoff_max_s = *x;
             }},
            {"factor",
             [&](const YAML::Node& b) {
               if (auto x = r.number(b, "restart.backoff.factor", 1)) rs.backoff_factor = *x;
             }},
        });
}

void read_retryable_exit_codes(Reader& r, const YAML::Node& n, JobRestart& rs) {
  if (!n.IsSequence()) {
    r.problem(n,
              fmt::format("restart.retryable_exit_codes must be a list of codes or ranges, e.g. [1, 128-255], not {}",
                          kind_name(n)));
    return;
  }
  rs.retryable_exit_codes.clear();
  for (const auto& item : n) {
    auto range = item.IsScalar() ? parse_exit_range(item.Scalar()) : std::nullopt;
    if (!range) {
      r.problem(item, fmt::format("restart.retryable_exit_codes: '{}' is not a code 0..255 or a range such as 128-255",
                                  item.IsScalar() ? item.Scalar() : kind_name(item)));
    } else {
      rs.retryable_exit_codes.push_back(*range);
    }
  }
}

void read_no_retry_log_patterns(Reader& r, const YAML::Node& n, JobRestart& rs) {
  if (!n.IsSequence()) {
    r.problem(n, fmt::format("restart.no_retry_log_patterns must be a list of regexes, e.g. ['CUDA out of memory'], "
                             "not {}",
                             kind_name(n)));
    return;
  }
  for (const auto& item : n) {
    if (auto x = r.regex(item, "restart.no_retry_log_patterns item", 0)) rs.no_retry_log_patterns.push_back(*x);
  }
}

void read_restart(Reader& r, const YAML::Node& n, JobSpec& spec) {
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
               if (auto x = r.integer(v, "restart.max_retries", 0, 1000)) rs.max_retries = static_cast<int>(*x);
             }},
            {"backoff", [&](const YAML::Node& v) { read_backoff(r, v, rs); }},
            {"retryable_exit_codes", [&](const YAML::Node& v) { read_retryable_exit_codes(r, v, rs); }},
            {"no_retry_log_patterns", [&](const YAML::Node& v) { read_no_retry_log_patterns(r, v, rs); }},
        });
}

void read_limits(Reader& r, const YAML::Node& n, JobSpec& spec) {
  r.map(n, "limits",
        {
            {"timeout",
             [&](const YAML::Node& v) {
               if (auto x = r.duration(v, "limits.timeout", kTimeoutRange)) spec.timeout_s = *x;
             }},
        });
}

void read_metrics(Reader& r, const YAML::Node& n, JobSpec& spec) {
  read_named_entries(r, n, "metrics", "name: 'regex with one (group)'", "metric name",
                     [&](const std::string& key, const YAML::Node& v) {
                       if (auto x = r.regex(v, "metrics." + key, 1)) spec.metrics[key] = *x;
                     });
}

// sbatch options the daemon sets itself (the job's shape, name and output file must stay its own),
// with the job file field to use instead.
const std::vector<std::pair<std::string, std::string>> kDaemonOwnedSbatchOptions = {
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

// The daemon-owned option that `arg` sets ("--time=5", "-t5", "--time"), if any.
const std::pair<std::string, std::string>* daemon_owned_option(const std::string& arg) {
  for (const auto& owned : kDaemonOwnedSbatchOptions) {
    const auto& opt = owned.first;
    if (arg == opt || arg.rfind(opt + "=", 0) == 0 ||
        (opt.size() == 2 && arg.size() > 2 && arg.rfind(opt, 0) == 0 && arg[1] != '-')) {
      return &owned;
    }
  }
  return nullptr;
}

void read_sbatch_args(Reader& r, const YAML::Node& v, JobSlurm& sl) {
  auto x = r.strings(v, "slurm.sbatch_args", "[--exclusive, --mem=8G]");
  if (!x) return;
  std::size_t i = 0;
  for (const auto& arg : *x) {
    const auto& at = v[i++];
    if (arg.empty() || arg[0] != '-' || arg.find_first_of("\r\n") != std::string::npos) {
      r.problem(at,
                fmt::format("slurm.sbatch_args: '{}' is not one sbatch option such as --exclusive or --mem=8G", arg));
      continue;
    }
    if (const auto* owned = daemon_owned_option(arg)) {
      r.problem(at,
                fmt::format("slurm.sbatch_args: {} is set by the daemon; use {} instead", owned->first, owned->second));
    }
    sl.sbatch_args.push_back(arg);
  }
}

// A partition, account or QOS name: letters, digits, '-', '_' or '.'.
void read_slurm_name(Reader& r, const YAML::Node& v, const std::string& what, std::string& into) {
  auto x = r.string(v, what, "a Slurm name (letters, digits, - _ .)");
  if (!x) return;
  if (x->empty() || !std::all_of(x->begin(), x->end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      })) {
    r.problem(v, fmt::format("{} '{}' must be a Slurm name of letters, digits, '-', '_' or '.'", what, *x));
    return;
  }
  into = *x;
}

void read_slurm(Reader& r, const YAML::Node& n, JobSpec& spec) {
  auto& sl = spec.slurm;
  r.map(n, "slurm",
        {
            {"partition", [&](const YAML::Node& v) { read_slurm_name(r, v, "slurm.partition", sl.partition); }},
            {"account", [&](const YAML::Node& v) { read_slurm_name(r, v, "slurm.account", sl.account); }},
            {"qos", [&](const YAML::Node& v) { read_slurm_name(r, v, "slurm.qos", sl.qos); }},
            {"time_limit",
             [&](const YAML::Node& v) {
               if (auto x = r.duration(v, "slurm.time_limit", kSlurmTimeLimitRange)) sl.time_limit_s = *x;
             }},
            {"sbatch_args", [&](const YAML::Node& v) { read_sbatch_args(r, v, sl); }},
        });
}

}  // namespace

namespace {

// The document's root mapping; JobSpecError for what is no YAML mapping at all.
YAML::Node load_document(std::string_view yaml, const std::string& file) {
  // YAML allows no NUL byte, and yaml-cpp would end the document there without a word.
  if (auto nul = yaml.find('\0'); nul != std::string_view::npos) {
    throw JobSpecError(file, {problem_at(yaml, nul,
                                         "a NUL byte: a job file is YAML text (is this a binary file, or "
                                         "UTF-16? save it as UTF-8)")});
  }
  YAML::Node root;
  try {
    const std::string text(yaml);
    if (auto p = structure_problem(text)) throw JobSpecError(file, {*p});
    root = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw JobSpecError(file, {{e.mark.line + 1, e.mark.column + 1, "not valid YAML: " + e.msg}});
  }
  if (!root.IsMap()) {
    throw JobSpecError(file,
                       {{1, 1, "a job file is a YAML mapping with at least name: and command: (see jobs/README.md)"}});
  }
  return root;
}

void read_shell(Reader& r, const YAML::Node& n, JobSpec& spec) {
  if (auto v = r.string(n, "shell", "a command line for /bin/sh -c")) {
    if (v->empty()) r.problem(n, "shell must not be empty");
    spec.shell = *v;
  }
}

void read_workdir(Reader& r, const YAML::Node& n, JobSpec& spec) {
  if (auto v = r.string(n, "workdir", "an absolute directory path")) {
    if (v->empty() || !std::filesystem::path(*v).is_absolute()) {  // Windows: with its drive, C:\\work
      r.problem(n, fmt::format("workdir must be an absolute path, not '{}'", *v));
    } else {
      spec.workdir = *v;
    }
  }
}

// A message of run's, which names its flags, in the job file's terms: "--max-restarts: must be ..." →
// "distributed.max_restarts must be ...".
std::string in_job_terms(std::string message) {
  for (const auto& o : launcher::run_option_table()) {
    if (o.job_form == launcher::JobForm::None) continue;
    const std::string flag = o.flag();
    const std::string key =
        o.job_form == launcher::JobForm::BatchPolicy ? "distributed.batch_size" : std::string(o.job_key);
    if (message.rfind(flag + ": ", 0) == 0) message = key + " " + message.substr(flag.size() + 2);
    for (auto at = message.find(flag); at != std::string::npos; at = message.find(flag, at + 1)) {
      const char next = at + flag.size() < message.size() ? message[at + flag.size()] : ' ';
      if (std::isalnum(static_cast<unsigned char>(next)) || next == '-' || next == '_') continue;  // a longer flag
      message.replace(at, flag.size(), key);
    }
  }
  return message;
}

// The job's `ddp-launch run` options, in the option table's order: every row the job file has a key
// for, with the job's value or the table's default.
std::vector<std::string> run_options_of(const JobSpec& spec, const std::vector<GivenRunKey>& given) {
  std::vector<std::string> out;
  for (const auto& o : launcher::run_option_table()) {
    const std::string flag = o.flag();
    switch (o.job_form) {
      case launcher::JobForm::None: break;
      case launcher::JobForm::Scalar: {
        std::string value(o.default_value);
        if (o.job_key == "resources.nodes") value = std::to_string(spec.resources.nodes);
        if (o.job_key == "resources.nproc_per_node") value = std::to_string(spec.resources.nproc_per_node);
        for (const auto& g : given) {
          if (g.option == &o) value = g.value;
        }
        if (!value.empty()) out.insert(out.end(), {flag, value});
        break;
      }
      case launcher::JobForm::BatchPolicy: {
        const auto policy = spec.distributed.batch_policy;
        const std::string_view name = policy == BatchPolicy::GlobalBatch    ? "global_batch"
                                      : policy == BatchPolicy::PerRankBatch ? "per_rank_batch"
                                                                            : "";
        if (name == o.job_key) out.insert(out.end(), {flag, std::to_string(spec.distributed.batch_size)});
        break;
      }
      case launcher::JobForm::NamedMap:
        for (const auto& [name, regex] : spec.metrics) out.insert(out.end(), {flag, name + "=" + regex});
        break;
    }
  }
  return out;
}

// The job's run options checked by `ddp-launch run`'s own parser and plan_run (the checks `run` makes,
// on a batch node as `sbatch` checks them): each key alone, at its line, then all of them together.
// The daemon's view of them (spec.distributed) is what run parsed.
void check_run_keys(Reader& r, const YAML::Node& root, JobSpec& spec, const std::vector<GivenRunKey>& given) {
  for (const auto& g : given) {
    try {
      launcher::plan_run(launcher::parse_run_argv({g.option->flag(), g.value, "--no-python", "x"}),
                         launcher::batch_node_facts(1));
    } catch (const UsageError& e) {
      r.problem(g.at, in_job_terms(e.what()));
    }
  }
  // `run --no-python` (the daemon's) forks a restart warm only when the command is python running a
  // script or module: anything else would start cold in silence, so say it here.
  for (const auto& g : given) {
    if (g.option->job_key == "distributed.warm_start" && g.value == "on" &&
        !launcher::warm_python_command(spec.worker_argv())) {
      r.problem(g.at,
                "distributed.warm_start: on forks restarts from a Python process, so command: must be a Python "
                "interpreter running a script or module ([/usr/bin/python3, train.py, …] or [python3, -m, "
                "pkg.train, …], no shell:): change the command, or use warm_start: auto or off (cold restarts)");
    }
  }
  if (!r.problems.empty()) return;
  spec.run_options = run_options_of(spec, given);
  auto argv = spec.run_options;
  argv.insert(argv.end(), {"--no-python", "x"});
  try {
    const auto a = launcher::parse_run_argv(argv);
    launcher::plan_run(a, launcher::batch_node_facts(spec.resources.nodes));
    auto& d = spec.distributed;
    d.backend = a.backend;
    d.store = a.store;
    d.max_restarts = a.max_restarts;
    d.shutdown_grace_s = launcher::run_option_seconds(a, "--shutdown-grace");
    d.hang_timeout = a.hang_timeout;
    d.on_hang = a.on_hang;
    d.restart_budget = a.restart_budget;
    d.warm_start = a.warm_start;
  } catch (const UsageError& e) {
    r.problem(root["distributed"] ? root["distributed"] : root, in_job_terms(e.what()));
  }
}

// Every problem found, in file order, as one JobSpecError.
void throw_if_problems(Reader& r, const std::string& file) {
  if (r.problems.empty()) return;
  std::stable_sort(r.problems.begin(), r.problems.end(), [](const SpecProblem& a, const SpecProblem& b) {
    return std::tie(a.line, a.column) < std::tie(b.line, b.column);
  });
  throw JobSpecError(file, std::move(r.problems));
}

// What no single field shows: the fields that go together or exclude each other.
void check_combinations(Reader& r, const YAML::Node& root, const JobSpec& spec, bool has_command) {
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
}

}  // namespace

JobSpec parse_job_spec(std::string_view yaml, const std::string& file) {
  YAML::Node root = load_document(yaml, file);
  JobSpec spec;
  Reader r;
  check_keys_and_scalars(root, r.problems);
  bool has_command = false;
  std::vector<GivenRunKey> given_run_keys;
  r.map(root, "the job",
        {
            {"apiVersion",
             [&](const YAML::Node& n) {
               if (auto v = r.choice(n, "apiVersion", {"ddp/v1"})) spec.api_version = *v;
             }},
            {"name", [&](const YAML::Node& n) { read_name(r, n, spec); }},
            {"command",
             [&](const YAML::Node& n) {
               has_command = true;
               read_command(r, n, spec);
             }},
            {"shell", [&](const YAML::Node& n) { read_shell(r, n, spec); }},
            {"args",
             [&](const YAML::Node& n) {
               if (auto v = r.strings(n, "args", "[--epochs, '10']")) spec.args = *v;
             }},
            {"workdir", [&](const YAML::Node& n) { read_workdir(r, n, spec); }},
            {"env", [&](const YAML::Node& n) { read_env(r, n, spec); }},
            {"resources", [&](const YAML::Node& n) { read_resources(r, n, spec); }},
            {"distributed", [&](const YAML::Node& n) { read_distributed(r, n, spec, given_run_keys); }},
            {"restart", [&](const YAML::Node& n) { read_restart(r, n, spec); }},
            {"limits", [&](const YAML::Node& n) { read_limits(r, n, spec); }},
            {"priority",
             [&](const YAML::Node& n) {
               if (auto x = r.integer(n, "priority (higher runs first)", -1000, 1000))
                 spec.priority = static_cast<int>(*x);
             }},
            {"metrics", [&](const YAML::Node& n) { read_metrics(r, n, spec); }},
            {"executor",
             [&](const YAML::Node& n) {
               if (auto v = r.choice(n, "executor", {"local", "slurm"})) spec.executor = *v;
             }},
            {"slurm", [&](const YAML::Node& n) { read_slurm(r, n, spec); }},
        });
  check_combinations(r, root, spec, has_command);
  check_run_keys(r, root, spec, given_run_keys);
  throw_if_problems(r, file);
  return spec;
}

}  // namespace ddp::jobs
