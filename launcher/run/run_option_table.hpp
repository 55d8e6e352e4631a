#pragma once
// `ddp-launch run`'s options as ONE table of data: each option once, with its flag spellings
// (torchrun's dash and underscore forms), PET_* variable, job-file key, type, range or choices,
// default, help text and platforms. Everything else comes from it: the CLI11 registration (and so
// `--help`, the man page, shell completion and `sbatch`'s mirrored run options), RunArgs' defaults,
// the range and choice checks plan_run makes, the job file's run keys (jobs/job_spec.cpp: a job
// file's run options become run's argv and are checked by the same plan_run) and the argv the daemon
// and its sbatch scripts pass to `run`. tests/unit/launcher/test_run_option_table.cpp holds the
// table to the CLI, the job file and the docs.
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "launcher/run/run_args.hpp"

namespace ddp::launcher {

// The RunArgs field an option fills.
using RunField = std::variant<std::string RunArgs::*, int RunArgs::*, unsigned RunArgs::*, double RunArgs::*,
                              bool RunArgs::*, std::optional<long> RunArgs::*, std::vector<std::string> RunArgs::*>;

enum class OptionType {
  Flag,      // no value (true when given)
  Integer,   // a whole number, inside `range` when it has one
  Number,    // a real number
  Duration,  // 30s, 5m, 250ms or seconds (common/duration.hpp), inside `range`; or one of `choices` (auto, off)
  Choice,    // one of `choices`
  Text,      // checked by plan_run's own rule
};

// How a job file gives the option (jobs/README.md).
enum class JobForm {
  None,        // not a job-file key: `not_in_jobs` says why
  Scalar,      // `job_key: value`, the value as run's flag takes it
  NamedMap,    // `metrics: {name: regex}`: one `--metric name=regex` per entry
  BatchPolicy  // `distributed: {batch_policy: <this option's job_key value>, batch_size: N}`
};

struct OptionRange {
  double min = 0;
  double max = 0;
};

struct RunOption {
  std::string_view names{};  // CLI11 spellings, e.g. "--max-restarts,--max_restarts"
  std::string_view env{};    // its PET_* variable ("" when none)
  RunField field{};          // the RunArgs field it fills
  OptionType type = OptionType::Text;
  std::string_view default_value{};  // as the flag would take it ("" when none); RunArgs() starts there
  std::string_view help{};
  std::vector<std::string_view> choices{};  // Choice: every value; Duration: words accepted besides a duration
  std::optional<OptionRange> range{};       // Integer, Duration (seconds)
  std::string_view job_key{};               // e.g. "distributed.max_restarts"; BatchPolicy: the batch_policy value
  JobForm job_form = JobForm::None;
  std::string_view not_in_jobs{};  // why a job file has no key for it (the daemon sets it, ...)
  std::string_view linux_only{};   // why the Windows build refuses it ("" when every build takes it)
  bool take_last = false;          // given twice: the last one wins (argparse's rule)
  bool repeatable = false;         // one value per use, repeatable (--metric)

  // "--max-restarts": the first long spelling, the option's name in messages, RunArgs::given and argv.
  std::string flag() const;
};

// Every run option, in --help's order.
const std::vector<RunOption>& run_option_table();

// The row of `flag` (any spelling, "--max_restarts" too); nullptr when none.
const RunOption* find_run_option(std::string_view flag);

// Registers every option of the table on `sub`, bound to `args`.
void register_run_options(CLI::App& sub, RunArgs& args);

// The field's value as `run` takes it on its command line: one string per value (none for a flag
// not set or an optional not given, "" for a set flag).
std::vector<std::string> run_option_values(const RunArgs& args, const RunOption& option);

// Sets the field from the text the flag would take (used for the defaults).
void set_run_option_value(RunArgs& args, const RunOption& option, const std::string& text);

// The table's range and choice checks on parsed arguments (plan_run's first step); a UsageError
// naming the flag, the value and what it takes.
void check_run_option_values(const RunArgs& args);

// The seconds a Duration option's value means, checked against its range (a UsageError otherwise).
double run_option_seconds(const RunArgs& args, std::string_view flag);

// The Windows build's refusals (`linux_only`): a UsageError for the first such option given.
void check_linux_only_options(const RunArgs& args);

// "agent | rank0 | file": an option's choices for messages.
std::string choices_text(const RunOption& option);

// The reference of every run option as Markdown: docs/run-options.md is this text (a unit test
// compares them; DDP_UPDATE_DOCS=1 makes it rewrite the file).
std::string run_options_markdown();

}  // namespace ddp::launcher
