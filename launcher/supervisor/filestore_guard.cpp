#include "launcher/supervisor/filestore_guard.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/error.hpp"
#include "store/filestore_cleaner.hpp"

namespace ddp::launcher {
namespace {

std::string reasons_of(const store::CleanReport& r) {
  std::string text;
  if (r.diagnosis) {
    for (const auto& why : r.diagnosis->reasons) text += (text.empty() ? "" : "; ") + why;
  }
  return text;
}

void check_one(const NamedFileStore& named, const store::CleanOptions& options) {
  const auto r = store::FileStoreCleaner(options).clean(named.path);
  const auto& path = named.path;
  using store::CleanOutcome;
  switch (r.outcome) {
    case CleanOutcome::Absent: return;
    case CleanOutcome::Removed:
      spdlog::info(
          "FileStore {} (named by the worker's {}) was left behind by a killed run: removed it before the "
          "launch, so the workers start on a fresh file ({})",
          path, named.where, reasons_of(r));
      return;
    case CleanOutcome::WouldRemove:  // dry run = several nodes: other nodes' users are invisible here
      spdlog::warn(
          "FileStore {} (named by the worker's {}) looks left behind by a killed run ({}), but with several "
          "nodes its users on the other nodes cannot be seen from here, so it stays. If no node of this job "
          "runs yet, remove it first: `ddp-launch clean {}`",
          path, named.where, reasons_of(r), path);
      return;
    case CleanOutcome::Refused:
      // Not a FileStore (a directory, other content, an empty file): a file:// URL in a worker's
      // arguments may name anything (a data set), so it is not ours to judge. An empty file is
      // harmless to torch, which starts a FileStore on it as on a new one.
      if (!r.empty_unproven) {
        spdlog::warn(
            "the worker's {} names {}, which is not a c10d FileStore ({}): left alone; if it is meant as "
            "the init_method, torch will fail on it",
            named.where, path, r.problem);
      }
      return;
    case CleanOutcome::Kept: break;
  }
  if (!r.problem.empty()) {
    throw Error(fmt::format("FileStore {} (named by the worker's {}) is stale but {}", path, named.where, r.problem));
  }
  throw Error(fmt::format(
      "FileStore {} (named by the worker's {}) is {}: {}. Workers started on it would hang or fail, so nothing was "
      "started. Stop what uses it, then remove it with `ddp-launch clean {}` (it shows the evidence; add --dry-run "
      "to remove nothing), or give the worker another path",
      path, named.where, store::to_string(r.diagnosis->verdict), reasons_of(r), path));
}

}  // namespace

void guard_user_filestores(const std::vector<std::string>& argv, const EnvMap& env, bool run_sets_filestore_var,
                           bool single_node) {
  const auto named = filestores_named_by(argv, env, run_sets_filestore_var, store::native_path_style());
  if (named.empty()) return;
  store::CleanOptions options;
  options.dry_run = !single_node;
  for (const auto& n : named) check_one(n, options);
}

}  // namespace ddp::launcher
