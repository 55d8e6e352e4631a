// `ddp-launch sbatch [sbatch options] [run options] SCRIPT [args]`: an sbatch script that starts one
// `ddp-launch run` per node under srun with the same run options; printed, written, or submitted.
// The run options are mirrored from the run command itself, so every run flag is accepted here too
// and checked by run's own parser before anything is written.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <variant>

#include "common/error.hpp"
#include "common/signals.hpp"
#include "launcher/commands/commands.hpp"
#include "launcher/run/run_options.hpp"
#include "slurm/sbatch_script.hpp"
#include "slurm/slurm_job.hpp"

namespace ddp::cli {
namespace {

struct MirroredOption {
  CLI::Option* option;
  std::string name;  // --long-name as run spells it
  bool flag;
};

struct SbatchArgs {
  slurm::SbatchScript script;
  std::string output_script;
  bool submit = false;
  bool wait = false;
  double submit_timeout = 60;
  double wait_timeout = 0;
  std::vector<MirroredOption> run_options;
};

// Registers every option of `run` on `sub` (same names, no binding, no PET_* defaults: the job's
// own environment supplies those at run time).
std::vector<MirroredOption> mirror_run_options(CLI::App& sub) {
  CLI::App probe;
  auto run = add_run_command(probe);
  std::vector<MirroredOption> out;
  for (const CLI::Option* opt : run.sub->get_options()) {
    if (opt == run.sub->get_help_ptr() || opt->get_positional() || opt->get_lnames().empty()) continue;
    std::vector<std::string> names;
    for (const auto& s : opt->get_snames()) {
      if (!sub.get_option_no_throw("-" + s)) names.push_back("-" + s);
    }
    for (const auto& l : opt->get_lnames()) {
      if (!sub.get_option_no_throw("--" + l)) names.push_back("--" + l);
    }
    if (names.empty()) continue;  // shadowed by an sbatch option of the same name
    std::string joined = fmt::format("{}", fmt::join(names, ","));
    const bool flag = opt->get_type_size_max() == 0;
    CLI::Option* mirror =
        flag ? sub.add_flag(joined, opt->get_description())
             : sub.add_option(joined, opt->get_description())->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    mirror->group("Run options (passed to `ddp-launch run` on every node)");
    out.push_back({mirror, "--" + opt->get_lnames().front(), flag});
  }
  return out;
}

// The run part is parsed by run's own parser and checked by run's own rules (launcher/run/run_options.hpp)
// as node 0 of the job would: a bad value fails here, not on the cluster.
void check_run_args(const std::vector<std::string>& options, const std::vector<std::string>& command,
                    const std::string& nodes) {
  CLI::App probe;
  probe.require_subcommand(1);
  auto* sub = probe.add_subcommand("run");
  auto run_args = launcher::add_run_options(*sub);
  sub->prefix_command();
  std::vector<std::string> args{"run"};
  args.insert(args.end(), options.begin(), options.end());
  args.insert(args.end(), command.begin(), command.end());
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    probe.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw UsageError(fmt::format("run options: {}", e.what()));
  }
  launcher::collect_run_args(*sub, *run_args);
  launcher::plan_run(*run_args, launcher::batch_node_facts(std::max(1, std::atoi(nodes.c_str()))));
}

// Copies what the job wrote to `path` since `offset` to stdout (the submit host sees the job's
// files on a shared filesystem, or here, on the same host).
void copy_new_output(const std::string& path, std::streamoff& offset) {
  if (path.empty()) return;
  std::ifstream f(path, std::ios::binary);
  if (!f) return;
  f.seekg(offset);
  std::string chunk((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  offset += static_cast<std::streamoff>(chunk.size());
  std::cout << chunk << std::flush;
}

// --wait: follows the job with `scontrol -o show job` once a second, streams its output file, and
// returns its exit status. SIGINT/SIGTERM/SIGHUP cancel it (scancel) and keep following to its end;
// a second signal stops following.
int follow_job(const std::string& id, double wait_timeout) {
  using Clock = std::chrono::steady_clock;
  sigset_t signals;
  sigemptyset(&signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&signals, sig);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  const auto query_timeout = std::chrono::seconds(30);
  const auto cancel_grace = std::chrono::seconds(120);
  const auto give_up = wait_timeout > 0
                           ? Clock::now() + std::chrono::milliseconds(static_cast<long>(wait_timeout * 1000))
                           : Clock::time_point::max();
  std::optional<Clock::time_point> cancelled_at;
  std::string last_state, out_path;
  std::streamoff offset = 0;
  while (true) {
    auto job = slurm::query_job(id, query_timeout);
    if (!job) throw Error(fmt::format("Slurm no longer knows job {} (purged before its end was seen)", id));
    if (out_path.empty()) out_path = job->std_out;
    copy_new_output(out_path, offset);
    const auto phase = slurm::phase_of(job->state);
    if (job->state != last_state) {
      last_state = job->state;
      spdlog::info("job {}: {}{}{}", id, job->state,
                   job->reason.empty() || job->reason == "None" ? "" : fmt::format(" ({})", job->reason),
                   job->node_list.empty() ? "" : fmt::format(" on {}", job->node_list));
    }
    if (slurm::is_final(phase)) {
      const int status = slurm::exit_status_of(*job);
      spdlog::info("job {} {} (ExitCode={}): exit status {}; output in {}", id, slurm::phase_name(phase),
                   job->exit_code, status, out_path);
      return status;
    }
    if (cancelled_at && Clock::now() - *cancelled_at > cancel_grace) {
      throw Error(fmt::format("job {} is still {} {}s after scancel; see `scontrol -o show job {}`", id, job->state,
                              cancel_grace.count(), id));
    }
    if (!cancelled_at && Clock::now() > give_up) {
      spdlog::error("job {} is still {} after --wait-timeout {}s; it is left as it is (scancel {} to stop it)", id,
                    job->state, wait_timeout, id);
      return 1;
    }
    timespec tick{1, 0};
    const int sig = ::sigtimedwait(&signals, nullptr, &tick);
    if (sig <= 0) continue;
    if (cancelled_at) {
      spdlog::warn("{} again: no longer following job {} (it was cancelled)", ddp::sig::signal_name(sig), id);
      return 128 + sig;
    }
    spdlog::warn("{}: cancelling job {} (scancel) and following it to its end", ddp::sig::signal_name(sig), id);
    slurm::cancel_job(id, query_timeout);
    cancelled_at = Clock::now();
  }
}

std::string this_executable() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.string();
}

// The options that fill the script's fields, in --help order: #SBATCH lines, and the launcher.
struct ScriptOption {
  const char* name;
  std::variant<std::string slurm::SbatchScript::*, std::vector<std::string> slurm::SbatchScript::*> field;
  const char* help;
};
using S = slurm::SbatchScript;
const ScriptOption kScriptOptions[] = {
    {"--job-name", &S::job_name, "Job name (default: the script's name)"},
    {"--output", &S::output, "Job output file, Slurm patterns allowed (default: %x-%j.out)"},
    {"--time", &S::time, "Time limit, e.g. 30 or 02:00:00 (default: the partition's)"},
    {"--partition", &S::partition, "Partition"},
    {"--account", &S::account, "Account"},
    {"--qos", &S::qos, "Quality of service"},
    {"--chdir", &S::chdir, "Working directory of the job (default: where sbatch runs)"},
    {"--sbatch-arg", &S::extra, "Any other sbatch option, one per use: --sbatch-arg=--exclusive"},
    {"--launcher", &S::launcher, "ddp-launch on the compute nodes (default: this binary)"},
};

void add_script_options(CLI::App& sub, slurm::SbatchScript& s) {
  for (const auto& o : kScriptOptions) {
    std::visit([&](auto field) { sub.add_option(o.name, s.*field, o.help)->group("Slurm options (#SBATCH lines)"); },
               o.field);
  }
}

// --output-script, --submit and --wait: where the script goes. Returns --wait's option.
CLI::Option* add_delivery_options(CLI::App& sub, SbatchArgs& a) {
  sub.add_option("--output-script", a.output_script, "Write the script to FILE (default: stdout)");
  sub.add_flag("--submit", a.submit, "Submit it with `sbatch --parsable` and print the job id");
  auto* wait_opt = sub.add_flag("--wait", a.wait,
                                "With --submit: follow the job to its end (its output to stdout), exit with its "
                                "status; Ctrl-C cancels it");
  sub.add_option("--wait-timeout", a.wait_timeout, "Seconds to follow with --wait before giving up (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub.add_option("--submit-timeout", a.submit_timeout, "Seconds to wait for sbatch to answer")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  return wait_opt;
}

// Everything from the script on is the job's command line.
void end_options_at_script(CLI::App& sub) {
  sub.prefix_command();
  // "--" before the script: CLI11 hands it back to the parent app unless the subcommand still has a
  // positional to fill. This hidden one never accepts a value (validate_positionals), so "--" and
  // everything after it land in remaining(), as a script found by prefix_command() does.
  sub.validate_positionals();
  sub.add_option("end_of_options")
      ->check(CLI::Validator([](const std::string&) { return std::string("never"); }, ""))
      ->group("");
  sub.footer(
      "Usage: ddp-launch sbatch [sbatch options] [run options] SCRIPT [script args...]\n"
      "--nnodes N (or MIN:MAX) becomes #SBATCH --nodes; each node's rank, the store host and port come from Slurm.");
}

// The script and its arguments: what follows the options, without a leading "--".
std::vector<std::string> script_command(const CLI::App& sub) {
  auto command = sub.remaining();
  if (!command.empty() && command.front() == "--") command.erase(command.begin());
  if (command.empty()) throw UsageError("no training script given: ddp-launch sbatch [options] SCRIPT [args...]");
  return command;
}

// The run options given on the command line, in the order run declares them; the last value wins.
std::vector<slurm::GivenRunOption> given_run_options(const std::vector<MirroredOption>& mirrored) {
  std::vector<slurm::GivenRunOption> given;
  for (const auto& m : mirrored) {
    if (m.option->count() == 0) continue;
    given.push_back({m.name, m.flag, m.flag ? std::string() : m.option->results().back()});
  }
  return given;
}

// A fresh file for a script that is only submitted (no --output-script).
// In $TMPDIR (else /tmp), as any tool's temporary file.
std::string temporary_script_path() {
  std::string name = (std::filesystem::temp_directory_path() / "ddp-launch-sbatch-XXXXXX").string();
  int fd = ::mkstemp(name.data());
  if (fd < 0) {
    throw Error(
        fmt::format("cannot create a temporary script file {}: {}; set TMPDIR to a writable directory or "
                    "give --output-script FILE",
                    name, std::strerror(errno)));
  }
  ::close(fd);
  return name;
}

// Empty when written; else why not.
std::string try_write_script(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  if (!f.flush()) return errno ? std::strerror(errno) : "the write failed";
  f.close();
  ::chmod(path.c_str(), 0755);
  return "";
}

void write_script(const std::string& path, const std::string& temp, const std::string& text) {
  errno = 0;
  const std::string why = try_write_script(path, text);
  if (why.empty()) return;
  if (temp.empty()) throw UsageError(fmt::format("--output-script {}: cannot write it: {}", path, why));
  std::error_code ec;
  std::filesystem::remove(temp, ec);  // never a half-written script left behind
  throw Error(
      fmt::format("cannot write the temporary script {} for --submit: {}; free space there, set TMPDIR, "
                  "or give --output-script FILE",
                  temp, why));
}

// sbatch --parsable; the temporary script (empty: none) is removed whatever the outcome.
std::string submit(const std::string& path, const std::string& temp, double timeout_s) {
  std::string id;
  try {
    id = slurm::submit_batch_script(path, std::chrono::milliseconds(static_cast<long>(timeout_s * 1000)));
  } catch (...) {
    if (!temp.empty()) std::filesystem::remove(temp);
    throw;
  }
  if (!temp.empty()) std::filesystem::remove(temp);
  return id;
}

// The script to stdout, to --output-script, or to sbatch (--submit, then --wait follows the job).
int deliver(const SbatchArgs& a, const std::string& text) {
  std::string path = a.output_script;
  std::string temp;
  if (path.empty() && a.submit) path = temp = temporary_script_path();
  if (path.empty()) {
    std::cout << text << std::flush;
    return 0;
  }
  write_script(path, temp, text);
  if (!a.submit) {
    spdlog::info("wrote {} (submit it with: sbatch {})", path, path);
    return 0;
  }
  const std::string id = submit(path, temp, a.submit_timeout);
  std::cout << id << std::endl;
  spdlog::info("submitted Slurm job {} ({} node(s)); follow it with `scontrol -o show job {}`", id, a.script.nodes, id);
  if (a.wait) return follow_job(id, a.wait_timeout);
  return 0;
}

}  // namespace

Command add_sbatch_command(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "sbatch", "Write (or --submit) an sbatch script that runs `ddp-launch run` once per node with these options");
  auto a = std::make_shared<SbatchArgs>();
  add_script_options(*sub, a->script);
  auto* wait_opt = add_delivery_options(*sub, *a);
  a->run_options = mirror_run_options(*sub);
  end_options_at_script(*sub);

  auto run = [a, sub, wait_opt]() -> int {
    auto& script = a->script;
    if (wait_opt->count() > 0 && !a->submit) throw UsageError("--wait follows a submitted job: add --submit");
    script.command = script_command(*sub);
    slurm::set_run_options(script, given_run_options(a->run_options));
    check_run_args(script.run_options, script.command, script.nodes);
    if (script.launcher.empty()) script.launcher = this_executable();
    return deliver(*a, slurm::render_sbatch_script(script));
  };
  return {sub, run};
}

}  // namespace ddp::cli
