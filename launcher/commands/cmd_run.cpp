// `ddp-launch run`: the supervisor, a drop-in for torchrun (same flags, dash and underscore
// spellings, PET_* environment overrides, same worker environment). The flags and their rules are
// in launcher/run/run_options.hpp; this file gathers the host's facts, applies the rules and does
// what they leave to the shell (interpreter, run directory).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <system_error>

#include "common/error.hpp"
#include "launcher/commands/commands.hpp"
#include "launcher/run/python_choice.hpp"
#include "launcher/run/run_options.hpp"
#include "launcher/supervisor/filestore_guard.hpp"
#include "launcher/supervisor/supervisor.hpp"
#include "platform/files.hpp"
#include "platform/programs.hpp"

namespace ddp::cli {
namespace {

std::string resolve_program(const std::string& program, const char* what) {
  auto found = platform::find_program(program);  // a path as it is (Windows: + .exe etc.), else on PATH
  if (found) return *found;
  if (platform::names_a_path(program))
    throw UsageError(fmt::format("{} '{}' is not an executable file", what, program));
  throw UsageError(fmt::format("{} '{}' was not found on PATH", what, program));
}

// torchrun's per-run directory inside --log-dir: <run_id>_<random>, made atomically, so two runs
// sharing a --log-dir never write into each other's files.
std::filesystem::path make_run_dir_in(const std::filesystem::path& log_dir, const std::string& run_id) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  std::string id = run_id;
  for (char& ch : id) {
    if (ch == '/' || ch == '\\' || ch == ':') ch = '_';
  }
  try {
    return platform::make_unique_directory(log_dir, id + "_");
  } catch (const std::system_error& e) {
    throw Error(
        fmt::format("cannot create this run's directory in --log-dir {}: {}{}. Give a --log-dir you "
                    "can write to",
                    log_dir.string(), e.code().message(), ec ? " (" + ec.message() + ")" : ""));
  }
}

// What the pure rules leave to the shell: the interpreter, argv[0] on PATH, stale FileStores the
// script names, the run directory.
void finish_config(launcher::RunPlan& plan, const launcher::HostFacts& facts) {
  auto& c = plan.config;
  if (plan.python_script && c.worker_argv[0].empty()) {
    auto choice = launcher::probe_interpreter(facts.env, std::chrono::seconds(10));
    (choice.has_torch ? spdlog::info("{}", choice.reason) : spdlog::warn("{}", choice.reason));
    c.worker_argv[0] = choice.program;
  }
  c.worker_argv[0] = resolve_program(c.worker_argv[0], plan.python_script ? "python interpreter" : "program");
  // A file:// init_method a killed run left behind; before the guardian exists (it repeats our argv).
  launcher::guard_user_filestores(c.worker_argv, c.base_env, c.store_mode == launcher::StoreMode::File,
                                  c.plan.nnodes == 1 && !c.dynamic.has_value());
  if (!c.log_base_dir.empty()) {
    c.run_dir = make_run_dir_in(c.log_base_dir, c.run_id);
    spdlog::info("per-rank log files go under {}", c.run_dir.string());
  }
}

}  // namespace

Command add_run_command(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Launch a DDP job: one worker per rank, like torchrun (same flags and env)");
  auto a = launcher::add_run_options(*sub);
  // Everything from the first positional on is the worker's command line, flags included.
  sub->prefix_command();
  sub->footer("Usage: ddp-launch run [options] SCRIPT [script args...]  (or PROGRAM [args] with --no-python)");

  auto run = [a, sub]() -> int {
    launcher::collect_run_args(*sub, *a);
    const auto facts = launcher::gather_host_facts();
    auto plan = launcher::plan_run(*a, facts);
    for (const auto& line : plan.info) spdlog::info("{}", line);
    for (const auto& line : plan.warnings) spdlog::warn("{}", line);
    finish_config(plan, facts);
    const int status = launcher::run_supervisor(plan.config);
    if (status != 0 && !plan.failure_hint.empty())
      spdlog::warn("a likely cause, seen before launch: {}", plan.failure_hint);
    return status;
  };
  return {sub, run};
}

}  // namespace ddp::cli
