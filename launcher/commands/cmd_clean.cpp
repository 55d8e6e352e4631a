// `ddp-launch clean PATH...`: what a c10d FileStore file left by a run holds, whether it is still
// in use and why, and removal of the stale ones, so the next run on that path starts clean.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "common/utf8_path.hpp"
#include "launcher/commands/commands.hpp"
#include "launcher/outputs/run_record.hpp"
#include "platform/host.hpp"
#include "store/filestore_cleaner.hpp"

namespace ddp::cli {
namespace {

constexpr int kExitClean = 0;  // every path is absent, removed, or (dry run) removable
constexpr int kExitKept = 1;   // something is in use, stuck, or could not be removed
constexpr int kExitUsage = 2;  // a path is missing, a directory, or not a FileStore file

struct CleanArgs {
  std::vector<std::string> paths;
  bool dry_run = false;
  bool missing_ok = false;
  bool force = false;
  double lock_timeout_s = 2.0;
};

// Accepts the init_method URL as well as the path, since that is what users have at hand.
std::string to_path(const std::string& arg) {
  return store::path_from_file_url(arg, store::native_path_style()).value_or(arg);
}

// Asks on the terminal before ending processes (without --force): y or yes ends them.
bool confirm_ending(const std::string& path, const std::vector<pid_t>& pids) {
  fmt::print("  end pid {} (of a dead run) and remove {}? [y/N] ", fmt::join(pids, ", pid "), path);
  std::fflush(stdout);
  std::string answer;
  if (!std::getline(std::cin, answer)) return false;
  return answer == "y" || answer == "Y" || answer == "yes";
}

int report_one(const std::string& arg, store::CleanOptions options, const CleanArgs& args) {
  const auto path = to_path(arg);
  const auto file = utf8_path(path);  // UTF-8, also on Windows (common/utf8_path.hpp)
  // Where the OS cannot say who has it open (Windows under Wine): the records of dead runs naming it.
  std::error_code ec;
  options.dead_run_workers =
      launcher::dead_run_workers(std::filesystem::absolute(file, ec), {std::filesystem::temp_directory_path(ec)});
  auto r = store::FileStoreCleaner(options).clean(file);
  if (!args.force && !args.dry_run && r.outcome == store::CleanOutcome::Kept && r.diagnosis &&
      !r.diagnosis->orphans.empty() && platform::stdin_is_terminal() && confirm_ending(path, r.diagnosis->orphans)) {
    options.end_orphans = true;
    r = store::FileStoreCleaner(options).clean(file);
  }
  using store::CleanOutcome;
  if (r.outcome == CleanOutcome::Absent) {
    if (args.missing_ok) {
      fmt::print("{}: absent, nothing to clean\n", path);
      return kExitClean;
    }
    spdlog::error(
        "{}: no such file; check the path (a run whose ranks all exit cleanly deletes its FileStore "
        "itself; pass --missing-ok if absent is fine)",
        path);
    return kExitUsage;
  }
  if (r.outcome == CleanOutcome::Refused) {
    if (r.empty_unproven) {
      spdlog::error("{}: {}; if a killed run's FileStore was at this path, pass --force to remove it", path, r.problem);
      return kExitUsage;
    }
    spdlog::error("{}: {}", path, r.problem);
    return kExitUsage;
  }

  fmt::print("{}{}: c10d FileStore\n", path, r.file != file ? fmt::format(" ({})", utf8_of(r.file)) : "");
  for (const auto& line : store::summarize(*r.log)) fmt::print("  {}\n", line);
  const auto& d = *r.diagnosis;
  if (!r.ended.empty()) {
    fmt::print("  ended pid {}: processes of a dead run that kept it in use\n", fmt::join(r.ended, ", pid "));
  }
  fmt::print("  verdict: {}\n", store::to_string(d.verdict));
  for (const auto& why : d.reasons) fmt::print("    - {}\n", why);
  switch (r.outcome) {
    case CleanOutcome::Removed: fmt::print("  removed\n"); return kExitClean;
    case CleanOutcome::WouldRemove: fmt::print("  would remove it (dry run: nothing removed)\n"); return kExitClean;
    default: break;
  }
  if (!r.problem.empty()) {
    fmt::print("  kept: {}\n", r.problem);
  } else {
    fmt::print("  kept: {}\n", d.advice);
  }
  return kExitKept;
}

}  // namespace

Command add_clean_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "clean", "Inspect c10d FileStore files (file:// rendezvous) left by crashed runs and remove the stale ones");
  auto args = std::make_shared<CleanArgs>();
  sub->add_option("paths", args->paths, "FileStore files, as paths or file:// init_method URLs")->required();
  sub->add_flag("--dry-run", args->dry_run, "Report what each file holds and the verdict; remove nothing");
  sub->add_flag("--missing-ok", args->missing_ok, "A path that does not exist is fine (exit 0), not an error");
  sub->add_flag("--force", args->force,
                "Treat an empty file as a FileStore a run was killed before writing to (else it is left alone: "
                "an empty file is no evidence), and end without asking the processes that keep a file in use when "
                "every one of them belongs to a dead run (its launcher is gone); every other check still applies");
  sub->add_option("--lock-timeout", args->lock_timeout_s,
                  "Seconds to keep retrying the exclusive flock before calling the file in use")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  sub->footer(
      "Exit status: 0 every file was stale and is removed (with --dry-run: would be), or absent with --missing-ok;\n"
      "1 a file is in use, has a reader stuck on a torn tail, or could not be removed;\n"
      "2 bad arguments, or a path that is missing, a directory, not a FileStore file, or empty (without --force).\n"
      "A file kept in use only by processes of a dead run (their launcher is gone): clean asks on a terminal\n"
      "whether to end them and remove it; --force does it without asking.");

  auto run = [args]() -> int {
    store::CleanOptions options;
    options.dry_run = args->dry_run;
    options.empty_is_filestore = args->force;
    options.end_orphans = args->force;
    options.lock_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(args->lock_timeout_s * 1000.0));
    int worst = kExitClean;
    for (const auto& p : args->paths) worst = std::max(worst, report_one(p, options, *args));
    return worst;
  };
  return {sub, run};
}

}  // namespace ddp::cli
