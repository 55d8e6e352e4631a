// Registration of `ddp-launch run`'s flags: every row of the option table (launcher/run/run_option_table.hpp:
// torchrun's names, dash and underscore spellings, PET_* variables, ranges and choices). The rules
// that turn them into a config are in run_options.cpp.
#include "common/error.hpp"
#include "launcher/run/run_option_table.hpp"
#include "launcher/run/run_options.hpp"

namespace ddp::launcher {

std::shared_ptr<RunArgs> add_run_options(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  register_run_options(app, *args);
  // Everything from the first positional on is the worker's command line, flags included.
  app.prefix_command();
  app.footer("Usage: ddp-launch run [options] SCRIPT [script args...]  (or PROGRAM [args] with --no-python)");
  return args;
}

void collect_run_args(const CLI::App& sub, RunArgs& a) {
  a.command = sub.remaining();
  if (!a.command.empty() && a.command.front() == "--") a.command.erase(a.command.begin());
  a.given.clear();
  for (const CLI::Option* opt : sub.get_options()) {
    if (opt->count() > 0 && !opt->get_lnames().empty()) a.given.insert("--" + opt->get_lnames().front());
  }
}

RunArgs parse_run_argv(const std::vector<std::string>& argv) {
  CLI::App app;
  auto args = add_run_options(app);
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw UsageError(e.what());
  }
  collect_run_args(app, *args);
  return *args;
}

}  // namespace ddp::launcher
