// A job file's run options are `ddp-launch run`'s: their keys come from the launcher's option table
// (launcher/run/run_option_table.hpp) and `run`'s own parser and plan_run check them. Table-driven over the
// table itself: every option with a job key round-trips CLI ⇄ job file ⇄ argv, and the CLI and the
// job file accept and refuse the same values.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "jobs/job_spec.hpp"
#include "launcher/run/run_option_table.hpp"
#include "launcher/run/run_options.hpp"

using namespace ddp::jobs;
using ddp::launcher::JobForm;
using ddp::launcher::OptionType;
using ddp::launcher::RunArgs;
using ddp::launcher::RunOption;
using Argv = std::vector<std::string>;

namespace {

std::string quoted(const std::string& value) {
  std::string out = "'";
  for (char c : value) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// A job file (executor: slurm, so that any node count is one; a Python command, which warm_start: on
// needs) with `entries` ("section" →
// "key: value" items).
std::string job_file(const std::map<std::string, std::vector<std::string>>& entries) {
  std::string out = "name: a\ncommand: [python3, t.py]\nexecutor: slurm\n";
  for (const auto& [section, items] : entries) {
    std::string joined;
    for (const auto& i : items) joined += (joined.empty() ? "" : ", ") + i;
    out += fmt::format("{}: {{{}}}\n", section, joined);
  }
  return out;
}

// The job file with one run key: "distributed.max_restarts" → distributed: {max_restarts: '3'}.
std::string job_file_with(const RunOption& o, const std::string& value) {
  const std::string key(o.job_key);
  const auto dot = key.find('.');
  return job_file({{key.substr(0, dot), {fmt::format("{}: {}", key.substr(dot + 1), quoted(value))}}});
}

// What `run` parsed, written back as a job file: every option that has a job key.
std::string job_file_from(const RunArgs& a) {
  std::map<std::string, std::vector<std::string>> entries;
  for (const auto& o : ddp::launcher::run_option_table()) {
    const auto values = ddp::launcher::run_option_values(a, o);
    const std::string key(o.job_key);
    switch (o.job_form) {
      case JobForm::None: break;
      case JobForm::Scalar: {
        const auto dot = key.find('.');
        entries[key.substr(0, dot)].push_back(fmt::format("{}: {}", key.substr(dot + 1), quoted(values.at(0))));
        break;
      }
      case JobForm::BatchPolicy:
        if (!values.empty()) {
          entries["distributed"].push_back("batch_policy: " + key);
          entries["distributed"].push_back("batch_size: " + values.at(0));
        }
        break;
      case JobForm::NamedMap:
        for (const auto& v : values) {
          const auto eq = v.find('=');
          entries[key].push_back(fmt::format("{}: {}", v.substr(0, eq), quoted(v.substr(eq + 1))));
        }
        break;
    }
  }
  return job_file(entries);
}

std::string job_error(const std::string& yaml) {
  try {
    parse_job_spec(yaml, "job.yaml");
    return "";
  } catch (const JobSpecError& e) {
    return e.message();
  }
}

std::string cli_error(const Argv& options) {
  Argv argv = options;
  argv.insert(argv.end(), {"--no-python", "python3", "t.py"});  // the job files' command
  try {
    ddp::launcher::plan_run(ddp::launcher::parse_run_argv(argv), ddp::launcher::batch_node_facts(1));
    return "";
  } catch (const ddp::UsageError& e) {
    return e.what();
  }
}

std::string number(double v) { return fmt::format("{}", static_cast<long long>(v)); }

// Values to try on a row: its choices, its bounds and just beyond them, and some that no row takes.
std::vector<std::string> samples(const RunOption& o) {
  std::vector<std::string> out(o.choices.begin(), o.choices.end());
  out.insert(out.end(), {"bogus", "-1", "0", "1", "2", "1.5", ""});
  if (o.range) {
    out.insert(out.end(), {number(o.range->min), number(o.range->max), number(o.range->max + 1)});
    if (o.range->min >= 1) out.push_back(number(o.range->min - 1));
  }
  if (o.type == OptionType::Duration) {
    out.insert(out.end(), {"90s", "2m", "250ms", "1e-12", "soon", fmt::format("{}s", o.range->max * 2)});
  }
  return out;
}

// resources.* are the daemon's counts: whole numbers only (run also takes cpu, gpu, auto, MIN:MAX).
bool job_form_of(const RunOption& o, const std::string& v) {
  if (o.job_key.rfind("resources.", 0) != 0) return true;
  return !v.empty() && v.find_first_not_of("-0123456789") == std::string::npos;
}

Argv pair_after(const Argv& argv, const std::string& flag) {
  auto at = std::find(argv.begin(), argv.end(), flag);
  if (at == argv.end() || at + 1 == argv.end()) return {};
  return {*at, *(at + 1)};
}

}  // namespace

TEST_CASE("the CLI and a job file accept and refuse the same values, for every option with a job key") {
  int compared = 0;
  for (const auto& o : ddp::launcher::run_option_table()) {
    if (o.job_form != JobForm::Scalar) continue;
    for (const auto& v : samples(o)) {
      if (!job_form_of(o, v)) continue;
      CAPTURE(o.flag());
      CAPTURE(v);
      const auto cli = cli_error({o.flag(), v});
      const auto job = job_error(job_file_with(o, v));
      CAPTURE(cli);
      CAPTURE(job);
      CHECK((cli.empty() == job.empty()));
      ++compared;
      // The job file's message is run's, in the job file's terms, at the key's line and column.
      if (!job.empty()) CHECK(job.find("job.yaml:4:") == 0);
      if (!job.empty()) CHECK(job.find(std::string(o.job_key)) != std::string::npos);
    }
  }
  CHECK(compared > 50);
}

TEST_CASE("every option with a job key round-trips CLI ⇄ job file ⇄ argv") {
  LaunchContext ctx{"/bin/ddp-launch", "7", "/l", "/e.jsonl", {}};
  for (const auto& o : ddp::launcher::run_option_table()) {
    if (o.job_form != JobForm::Scalar) continue;
    for (const auto& v : samples(o)) {
      if (!job_form_of(o, v) || !cli_error({o.flag(), v}).empty()) continue;
      CAPTURE(o.flag());
      CAPTURE(v);
      // CLI → RunArgs → job file → JobSpec → argv → RunArgs: the same value all the way.
      const RunArgs from_cli = ddp::launcher::parse_run_argv({o.flag(), v, "x"});
      const auto spec = parse_job_spec(job_file_from(from_cli), "job.yaml");
      // An empty value of an option without a default is the option not given (--checkpoint-file ''):
      // no flag in the argv, the same RunArgs.
      const Argv pair = v.empty() && o.default_value.empty() ? Argv{} : Argv{o.flag(), v};
      CHECK(pair_after(spec.run_options, o.flag()) == pair);
      Argv argv = spec.run_options;
      argv.push_back("x");
      const RunArgs from_job = ddp::launcher::parse_run_argv(argv);
      for (const auto& row : ddp::launcher::run_option_table()) {
        CHECK_MESSAGE(
            ddp::launcher::run_option_values(from_job, row) == ddp::launcher::run_option_values(from_cli, row),
            row.flag());
      }
      // The daemon's argv and the sbatch script's `run` line carry it as written.
      CHECK(pair_after(launch_argv(spec, ctx), o.flag()) == pair);
      if (o.flag() != "--nnodes") {
        CHECK(pair_after(slurm_batch_script(spec, ctx, "out").run_options, o.flag()) == pair);
      }
      // And the job file written from it reads back to the same argv.
      CHECK(parse_job_spec(job_file_from(from_job), "job.yaml").run_options == spec.run_options);
    }
  }
}

TEST_CASE("the batch policy and metrics round-trip too") {
  for (const Argv& options : {Argv{"--global-batch", "8"}, Argv{"--per-rank-batch", "32"},
                              Argv{"--metric", "loss=loss ([0-9.]+)", "--metric", "acc=acc=([0-9.]+)"}}) {
    CAPTURE(options.front());
    Argv argv = options;
    argv.push_back("x");
    const RunArgs from_cli = ddp::launcher::parse_run_argv(argv);
    const auto spec = parse_job_spec(job_file_from(from_cli), "job.yaml");
    Argv again = spec.run_options;
    again.push_back("x");
    const RunArgs from_job = ddp::launcher::parse_run_argv(again);
    for (const auto& row : ddp::launcher::run_option_table()) {
      auto expected = ddp::launcher::run_option_values(from_cli, row);
      auto got = ddp::launcher::run_option_values(from_job, row);
      std::sort(expected.begin(), expected.end());  // metrics: a job file's map is in name order
      std::sort(got.begin(), got.end());
      CHECK_MESSAGE(got == expected, row.flag());
    }
  }
}

TEST_CASE("every flag the daemon and its sbatch scripts pass to `run` is a row of the option table") {
  const auto spec = parse_job_spec(R"(name: a
command: [x]
executor: slurm
resources: {nodes: 2, nproc_per_node: 2}
distributed: {max_restarts: 3, hang_timeout: 5m, batch_policy: global_batch, batch_size: 64}
metrics: {loss: 'loss=([0-9.]+)'}
)",
                                   "job.yaml");
  LaunchContext ctx{"/bin/ddp-launch", "7", "/l", "/e.jsonl", {}};
  const auto argv = launch_argv(spec, ctx);
  const auto script = slurm_batch_script(spec, ctx, "out");
  for (const auto& args : {Argv(argv.begin() + 2, argv.end()), script.run_options}) {
    for (const auto& a : args) {
      if (a == "x") break;  // the worker's argv
      if (a.rfind("--", 0) == 0) CHECK_MESSAGE(ddp::launcher::find_run_option(a) != nullptr, a);
    }
  }
}

TEST_CASE("jobs/README.md documents every run key of a job file") {
  std::ifstream in(std::string(DDP_SOURCE_DIR) + "/jobs/README.md");
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str().find("docs/run-options.md") != std::string::npos);
  for (const auto& o : ddp::launcher::run_option_table()) {
    if (o.job_form != JobForm::Scalar) continue;
    const std::string key(o.job_key);
    CHECK_MESSAGE(text.str().find(key.substr(key.find('.') + 1) + ":") != std::string::npos, key);
  }
}

TEST_CASE("the recovery keys (issue 28) reach run's argv, and run plans the job with them") {
  const auto spec = parse_job_spec(R"(name: a
command: [/usr/bin/python3, train.py]
distributed:
  max_restarts: 3
  checkpoint_file: /ckpt/iteration.txt
  max_no_progress_restarts: 2
  restart_budget: progress
  min_restart_interval: 30s
  gpu_release_timeout: 10s
  gpu_watch_interval: 2s
  gpu_low_util: 20
  gpu_low_window: 5m
  warm_start: on
)",
                                   "job.yaml");
  LaunchContext ctx{"/bin/ddp-launch", "7", "/l", "/e.jsonl", {}};
  const auto argv = launch_argv(spec, ctx);
  for (const Argv& pair : {Argv{"--checkpoint-file", "/ckpt/iteration.txt"}, Argv{"--max-no-progress-restarts", "2"},
                           Argv{"--restart-budget", "progress"}, Argv{"--min-restart-interval", "30s"},
                           Argv{"--gpu-release-timeout", "10s"}, Argv{"--gpu-watch-interval", "2s"},
                           Argv{"--gpu-low-util", "20"}, Argv{"--gpu-low-window", "5m"}, Argv{"--warm-start", "on"}}) {
    CHECK_MESSAGE(pair_after(argv, pair[0]) == pair, pair[0]);
  }
  CHECK(spec.distributed.restart_budget == "progress");
  CHECK(spec.distributed.warm_start == "on");
  // What the daemon's supervisor makes of that argv: the budget, and restarts forked warm (--no-python).
  const auto plan = ddp::launcher::plan_run(ddp::launcher::parse_run_argv(Argv(argv.begin() + 2, argv.end())),
                                            ddp::launcher::batch_node_facts(1));
  const auto& c = plan.config;
  CHECK(c.checkpoint_file == "/ckpt/iteration.txt");
  CHECK(c.max_no_progress_restarts == 2);
  CHECK(c.budget_mode == ddp::launcher::BudgetMode::Progress);
  CHECK(c.min_restart_interval == std::chrono::seconds(30));
  CHECK(c.gpu_release_timeout == std::chrono::seconds(10));
  CHECK(c.warm_start);
  CHECK(c.worker_argv == Argv{"/usr/bin/python3", "-u", "train.py"});
  // A job that does not say warm_start stays cold: its command runs as given.
  const auto cold =
      parse_job_spec("name: a\ncommand: [/usr/bin/python3, train.py]\ndistributed: {max_restarts: 1}\n", "job.yaml");
  const auto cold_argv = launch_argv(cold, ctx);
  CHECK(pair_after(cold_argv, "--warm-start") == Argv{"--warm-start", "auto"});
  const auto cold_plan = ddp::launcher::plan_run(
      ddp::launcher::parse_run_argv(Argv(cold_argv.begin() + 2, cold_argv.end())), ddp::launcher::batch_node_facts(1));
  CHECK_FALSE(cold_plan.config.warm_start);
  CHECK(cold_plan.config.worker_argv == Argv{"/usr/bin/python3", "train.py"});
}

TEST_CASE("a bad recovery key is refused at its line and column, in the job file's terms") {
  const auto error = job_error(R"(name: a
command: [/usr/bin/python3, train.py]
distributed:
  max_no_progress_restarts: -1
  restart_budget: sometimes
  min_restart_interval: soon
  gpu_release_timeout: 400d
  gpu_low_util: 101
  warm_start: maybe
)");
  CAPTURE(error);
  for (const auto& [line, key] : std::vector<std::pair<std::string, std::string>>{
           {"job.yaml:4:29: distributed.max_no_progress_restarts", "0 to 1000"},
           {"job.yaml:5:19: distributed.restart_budget", "count | progress"},
           {"job.yaml:6:25: distributed.min_restart_interval", "soon"},
           {"job.yaml:7:24: distributed.gpu_release_timeout", "400d"},
           {"job.yaml:8:17: distributed.gpu_low_util", "0 to 100"},
           {"job.yaml:9:15: distributed.warm_start", "auto | on | off"}}) {
    const auto at = error.find(line);
    CHECK_MESSAGE(at != std::string::npos, line);
    if (at != std::string::npos)
      CHECK_MESSAGE(error.substr(at, error.find('\n', at) - at).find(key) != std::string::npos, key);
  }
  CHECK(error.find("--") == std::string::npos);  // no run flag: the job file's keys
}

TEST_CASE("warm_start: on needs a Python command: a shell line or another program is refused, naming the fix") {
  for (const std::string& command : {std::string("shell: 'python3 train.py'"), std::string("command: [/bin/true]"),
                                     std::string("command: [python3, -c, 'print(1)']")}) {
    CAPTURE(command);
    const auto error = job_error("name: a\n" + command + "\ndistributed: {max_restarts: 1, warm_start: on}\n");
    CHECK(error.find("job.yaml:3:44: distributed.warm_start: on forks restarts from a Python process") == 0);
    CHECK(error.find("warm_start: auto or off") != std::string::npos);
  }
  CHECK(job_error("name: a\ncommand: [python3, -m, pkg.train]\ndistributed: {max_restarts: 1, warm_start: on}\n")
            .empty());
  CHECK(job_error("name: a\nshell: 'python3 train.py'\ndistributed: {max_restarts: 1, warm_start: off}\n").empty());
}
