// `ddp-launch doctor`: the health check to run before a job. Each check looks at one thing a DDP
// launch depends on (the store port, leftover FileStore files, GPUs, OMP_NUM_THREADS, the Python
// interpreter and its torch, the open-file limit; on Windows the host name gloo resolves) and says
// what it found and what to do about it.
// It changes nothing: a busy port is named, a stale FileStore is diagnosed but not removed.
//
// The judges below take values and return a DoctorCheck; the probes around them do the I/O.
#include <fmt/format.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/env_contract.hpp"
#include "common/error.hpp"
#include "common/exit_status.hpp"
#include "common/gpu.hpp"
#include "launcher/commands/commands.hpp"
#include "launcher/run/host_facts.hpp"
#include "launcher/run/python_choice.hpp"
#include "launcher/supervisor/filestore_scan.hpp"
#include "launcher/workers/worker_env.hpp"
#include "platform/host.hpp"
#include "platform/listener.hpp"
#include "platform/proc.hpp"
#include "platform/programs.hpp"
#include "platform/resolve.hpp"
#include "platform/subprocess.hpp"
#include "store/filestore_cleaner.hpp"

namespace ddp::cli {
namespace {

constexpr int kExitHealthy = 0;  // no check failed (warnings allowed)
constexpr int kExitFailed = 1;   // at least one check failed

// A store serves one connection per rank and keeps a few descriptors for itself; 4096 ranks is
// what we call a large rendezvous.
constexpr std::uint64_t kLargeRendezvousRanks = 4096;
constexpr std::uint64_t kReservedDescriptors = 64;

// The fix for a python without torch, when this machine has an interpreter worth trying.
constexpr const char* kSystemPython = "/usr/bin/python3";

// What the interpreter is asked: one marked JSON line, whatever goes wrong inside.
constexpr const char* kProbeMarker = "DDP_DOCTOR_PROBE ";
constexpr const char* kProbeScript = R"(import json, sys
r = {"python": sys.version.split()[0], "executable": sys.executable}
try:
    import torch
    r["torch"] = torch.__version__
    import torch.distributed as dist
    r["distributed"] = bool(dist.is_available())
    r["gloo"] = bool(r["distributed"] and dist.is_gloo_available())
except BaseException as e:
    r["error"] = "%s: %s" % (type(e).__name__, e)
print("DDP_DOCTOR_PROBE " + json.dumps(r))
sys.stdout.flush()
)";

enum class Status { Ok, Warn, Fail };

std::string_view to_string(Status s) {
  switch (s) {
    case Status::Ok: return "ok";
    case Status::Warn: return "warn";
    case Status::Fail: return "fail";
  }
  return "?";
}

struct DoctorCheck {
  Status status = Status::Ok;
  std::string check;    // port, filestore, gpu, omp, nofile, hostname (Windows), python
  std::string finding;  // what was found (no trailing period)
  std::string action;   // what to do; empty when nothing needs doing
  nlohmann::json details = nlohmann::json::object();

  // One line whatever the texts hold: a holder's argv may carry newlines.
  std::string line() const {
    auto text = fmt::format("{:<4}  {}: {}{}", to_string(status), check, finding, action.empty() ? "" : ". " + action);
    for (auto& ch : text) {
      if (ch == '\n' || ch == '\r' || ch == '\t') ch = ' ';
    }
    return text;
  }
  nlohmann::json to_json() const {
    return {{"check", check}, {"status", to_string(status)}, {"finding", finding}, {"action", action},
            {"line", line()}, {"details", details}};
  }
};

struct DoctorArgs {
  int port = 29500;
  std::string python;
  std::vector<std::string> filestores;
  double python_timeout_s = 60.0;
  bool json = false;
};

// ---- port -----------------------------------------------------------------------------------

struct BindAttempt {
  std::string address;
  bool in_use = false;  // the address is taken
  std::string error;    // why bind or listen failed; "" when the port could be taken
};

BindAttempt try_bind(const std::string& address, std::uint16_t port) {
  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io);
  boost::system::error_code ec;
  const asio::ip::tcp::endpoint ep(asio::ip::make_address(address, ec), port);
  // As a store claims its port (platform/listener.hpp: POSIX counts a port with only TIME_WAIT
  // leftovers as free), then listen() too: bind can succeed beside a listener that listen meets.
  acceptor.open(ep.protocol(), ec);
  if (!ec) platform::prepare_listener(acceptor);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(1, ec);
  if (!ec) return {address, false, ""};
  return {address, ec == asio::error::address_in_use, ec.message()};
}

// `who_holds_it`: the command that names a port's owner on this OS, for when we cannot.
DoctorCheck judge_port(std::uint16_t port, const std::vector<BindAttempt>& attempts,
                       const std::vector<proc::ProcessInfo>& holders, const std::string& who_holds_it) {
  DoctorCheck c{Status::Ok, "port", "", "", {{"port", port}}};
  std::vector<std::string> free, busy, other;
  for (const auto& a : attempts) {
    c.details["bind"][a.address] = a.error.empty() ? "free" : a.error;
    if (a.error.empty()) {
      free.push_back(a.address);
    } else if (a.in_use) {
      busy.push_back(a.address);
    } else {
      other.push_back(fmt::format("{}: {}", a.address, a.error));
    }
  }
  c.details["holders"] = nlohmann::json::array();
  for (const auto& h : holders) c.details["holders"].push_back({{"pid", h.pid}, {"cmdline", h.cmdline}});
  if (busy.empty() && other.empty()) {
    c.finding = fmt::format("port {} is free on {}", port, fmt::join(free, " and "));
    return c;
  }
  c.status = Status::Fail;
  if (!busy.empty()) {
    c.finding = fmt::format(
        "port {} is in use on {}: held by {}", port, fmt::join(busy, " and "),
        holders.empty() ? "a socket that is not listening (or in another network namespace)" : proc::describe(holders));
    std::string stop;
    for (const auto& h : holders) {
      if (h.pid != 0) stop += (stop.empty() ? "" : " ") + std::to_string(h.pid);
    }
    c.action = fmt::format(
        "Stop {}, or give the job another port (--master-port), or leave --master-port out: `ddp-launch run` "
        "picks a free port by default",
        stop.empty() ? "whatever holds it (`" + who_holds_it + "` names it)" : "it (kill " + stop + ")");
  } else {
    c.finding = fmt::format("port {} cannot be bound: {}", port, fmt::join(other, "; "));
    c.action = port < 1024 ? "Ports below 1024 need root (CAP_NET_BIND_SERVICE): choose a port of 1024 or more"
                           : "Choose another port, or leave --master-port out: `ddp-launch run` picks a free one";
  }
  return c;
}

DoctorCheck check_port(std::uint16_t port) {
  std::vector<BindAttempt> attempts{try_bind("127.0.0.1", port), try_bind("0.0.0.0", port)};
  std::vector<proc::ProcessInfo> holders;
  for (const auto& a : attempts) {
    if (a.in_use) {
      holders = proc::listeners_on_port(port);
      break;
    }
  }
  const auto who = platform::this_os() == platform::Os::Windows ? fmt::format("netstat -ano | findstr :{}", port)
                                                                : fmt::format("sudo ss -ltnp 'sport = :{}'", port);
  return judge_port(port, attempts, holders, who);
}

// ---- FileStore files ------------------------------------------------------------------------

DoctorCheck judge_filestore(const std::string& given, const store::CleanReport& r) {
  DoctorCheck c{Status::Ok, "filestore", "", "", {{"path", r.path.string()}}};
  const auto path = r.path.string();
  using store::CleanOutcome;
  switch (r.outcome) {
    case CleanOutcome::Absent:
      c.details["verdict"] = "absent";
      c.finding = fmt::format("{} does not exist: a run can create it afresh", path);
      return c;
    case CleanOutcome::Refused:
      c.status = Status::Fail;
      c.details["verdict"] = "refused";
      c.finding = fmt::format("{}: {}", path, r.problem);
      c.action = r.empty_unproven
                     ? fmt::format(
                           "If a killed run's FileStore was at this path, remove it before the next run: "
                           "`ddp-launch clean --force {}`; else give the job another init_method path",
                           given)
                     : "Give the job another init_method path (doctor and clean never touch a file that is not a "
                       "FileStore)";
      return c;
    default: break;
  }
  const auto& d = *r.diagnosis;
  c.status = Status::Fail;
  c.details["verdict"] = std::string(store::to_string(d.verdict));
  c.details["reasons"] = d.reasons;
  c.details["keys"] = r.log->num_keys();
  c.details["bytes"] = r.log->size();
  c.finding = fmt::format("{} is a c10d FileStore file ({} key{}, {} bytes), verdict {}: {}", path, r.log->num_keys(),
                          r.log->num_keys() == 1 ? "" : "s", r.log->size(), store::to_string(d.verdict),
                          fmt::join(d.reasons, "; "));
  if (r.outcome == CleanOutcome::WouldRemove) {
    c.action = fmt::format("Remove it before the next run on this path: `ddp-launch clean {}` (doctor removed nothing)",
                           given);
  } else {
    c.action = fmt::format("Do not start a job on this path now: {} (doctor removed nothing)", d.advice);
  }
  return c;
}

DoctorCheck check_filestore(const std::string& arg) {
  store::CleanOptions options;
  options.dry_run = true;
  const store::FileStoreCleaner cleaner(options);
  const auto path = store::path_from_file_url(arg, store::native_path_style()).value_or(arg);
  return judge_filestore(arg, cleaner.clean(path));
}

// Without --filestore: the FileStores earlier runs left where doctor can find them
// (launcher/supervisor/filestore_scan.hpp). A stale one is a warning (this machine is fine; the next job on that
// path is not), a file in use is a running job's and not listed.
std::vector<DoctorCheck> check_left_filestores(const std::filesystem::path& temp_dir) {
  std::vector<DoctorCheck> out;
  store::CleanOptions options;
  options.dry_run = true;
  const store::FileStoreCleaner cleaner(options);
  for (const auto& found : launcher::filestores_on_disk(temp_dir)) {
    const auto report = cleaner.clean(found.path);
    if (report.outcome != store::CleanOutcome::WouldRemove) continue;
    auto c = judge_filestore(found.path.string(), report);
    c.status = Status::Warn;
    c.finding += fmt::format(" ({})", found.why);
    c.details["found"] = found.why;
    out.push_back(std::move(c));
  }
  if (out.empty()) {
    out.push_back(
        {Status::Ok,
         "filestore",
         fmt::format("no stale FileStore file in {} or named by a dead run's record there", temp_dir.string()),
         "",
         {{"path", temp_dir.string()}, {"verdict", "none found"}}});
  }
  return out;
}

// ---- GPUs -----------------------------------------------------------------------------------

DoctorCheck judge_gpus(const gpu::GpuCount& gpus, const std::string& library) {
  DoctorCheck c{Status::Ok, "gpu", "", "", {{"library", library}}};
  if (!gpus.count) {
    c.status = Status::Warn;
    c.details["count"] = nullptr;
    c.details["why_not"] = gpus.why_not;
    c.finding = fmt::format("NVML is not available ({}), so GPU checks are off (and run's GPU watch)", gpus.why_not);
    c.action = fmt::format(
        "CPU jobs with gloo are fine. For GPUs install the NVIDIA driver, or point {} at {}; until "
        "then `--nproc-per-node gpu` refuses and `auto` starts one rank per CPU",
        gpu::kNvmlLibraryVar, gpu::nvml_library_default());
    return c;
  }
  c.details["count"] = *gpus.count;
  if (*gpus.count == 0) {
    c.status = Status::Warn;
    c.finding = "NVML works but reports 0 GPUs";
    c.action = "Check `nvidia-smi` and the container's GPU access; `--nproc-per-node gpu` refuses, `auto` uses CPUs";
    return c;
  }
  c.finding = fmt::format(
      "NVML sees {} GPU{}: `--nproc-per-node gpu` starts one rank per GPU, and run watches their utilisation",
      *gpus.count, *gpus.count == 1 ? "" : "s");
  return c;
}

// ---- OMP_NUM_THREADS ------------------------------------------------------------------------

DoctorCheck judge_omp(const std::optional<std::string>& value, unsigned cores) {
  DoctorCheck c{Status::Ok, "omp", "", "", {{"cores", cores}}};
  launcher::EnvMap env;
  if (value) env[std::string(env::kOmpNumThreads)] = *value;
  const auto chosen = launcher::omp_threads_default(env, 2);
  c.details["value"] = value ? nlohmann::json(*value) : nlohmann::json(nullptr);
  c.details["run_sets_for_several_ranks"] = chosen ? nlohmann::json(*chosen) : nlohmann::json(nullptr);
  if (!value) {
    c.finding = fmt::format(
        "{} is unset: with several ranks on this node `ddp-launch run` sets it to {} for every worker (as torchrun "
        "does); a single rank keeps torch's default of one thread per core ({})",
        env::kOmpNumThreads, chosen.value_or("1"), cores);
    c.action = fmt::format("Set {} yourself to choose another value", env::kOmpNumThreads);
    return c;
  }
  char* end = nullptr;
  errno = 0;
  const long n = std::strtol(value->c_str(), &end, 10);
  if (value->empty() || *end != '\0' || errno != 0 || n < 1) {
    c.status = Status::Warn;
    c.finding = fmt::format("{}='{}' is not a positive number; `ddp-launch run` passes it to every worker as is",
                            env::kOmpNumThreads, *value);
    c.action = fmt::format("Set it to a thread count per rank (e.g. {}=1), or unset it", env::kOmpNumThreads);
    return c;
  }
  c.finding = fmt::format("{}={}: `ddp-launch run` passes it to every worker unchanged ({} threads per rank, {} cores)",
                          env::kOmpNumThreads, n, n, cores);
  return c;
}

// ---- host name (Windows) --------------------------------------------------------------------

// gloo on Windows (its uv transport) takes the address the host name resolves to: one that no
// interface of this machine holds fails with error 10049 (WSAEADDRNOTAVAIL: pytorch#80638, #77523,
// e.g. a hosts entry Docker Desktop wrote), and a name that does not resolve fails at once.
DoctorCheck judge_hostname(const std::string& name, const platform::HostResolution& r) {
  DoctorCheck c{Status::Ok, "hostname", "", "", {{"name", name}, {"addresses", nlohmann::json::array()}}};
  const std::string hosts_file = R"(C:\Windows\System32\drivers\etc\hosts)";
  const std::string ifname_fix = fmt::format("or set {} to the interface gloo should use", env::kGlooSocketIfname);
  if (name.empty()) {
    c.status = Status::Warn;
    c.finding = "the OS gives no host name, which gloo looks its own address up by";
    c.action = fmt::format("Set the computer name, {}", ifname_fix);
    return c;
  }
  std::vector<std::string> all, foreign;
  bool loopback_only = true;
  for (const auto& a : r.addresses) {
    c.details["addresses"].push_back(
        {{"address", a.address}, {"local", a.local}, {"loopback", a.loopback}, {"bind_error", a.bind_error}});
    all.push_back(a.address);
    loopback_only = loopback_only && a.loopback;
    if (!a.local) foreign.push_back(fmt::format("{} ({})", a.address, a.bind_error));
  }
  if (!r.error.empty()) {
    c.status = Status::Warn;
    c.finding =
        fmt::format("the host name {} does not resolve ({}): gloo looks its own address up by it", name, r.error);
    c.action = fmt::format("Add this machine's address for {} to {}, {}", name, hosts_file, ifname_fix);
    return c;
  }
  if (!foreign.empty()) {
    c.status = Status::Warn;
    c.finding = fmt::format(
        "the host name {} resolves to {}, which no interface of this machine holds: gloo binding it fails with "
        "error 10049 (WSAEADDRNOTAVAIL)",
        name, fmt::join(foreign, ", "));
    c.action = fmt::format("Remove or fix the entry for {} in {} (Docker Desktop writes one), {}", name, hosts_file,
                           ifname_fix);
    return c;
  }
  c.finding = fmt::format("the host name {} resolves to {}, held by this machine", name, fmt::join(all, ", "));
  if (loopback_only) {
    c.action = fmt::format(
        "Fine on one machine; with several nodes gloo would give the others a loopback address: set {} there",
        env::kGlooSocketIfname);
  }
  return c;
}

DoctorCheck check_hostname() {
  const auto name = platform::host_name();
  return judge_hostname(name, name.empty() ? platform::HostResolution{} : platform::resolve_host(name));
}

// ---- open-file limit ------------------------------------------------------------------------

DoctorCheck judge_nofile(std::uint64_t soft, std::uint64_t hard) {
  DoctorCheck c{Status::Ok, "nofile", "", "", {{"soft", soft}, {"hard", hard}}};
  const std::uint64_t need = kLargeRendezvousRanks + kReservedDescriptors;
  c.details["large_rendezvous_needs"] = need;
  auto ranks = [](std::uint64_t limit) { return limit > kReservedDescriptors ? limit - kReservedDescriptors : 0; };
  if (hard < need) {
    c.status = Status::Warn;
    c.finding = fmt::format(
        "open-file limit soft {}, hard {}: a store holds one descriptor per rank connection, so one store can serve "
        "about {} ranks, fewer than a large rendezvous ({} ranks)",
        soft, hard, ranks(hard), kLargeRendezvousRanks);
    c.action = fmt::format(
        "Raise the hard limit to at least {} (`nofile` in /etc/security/limits.conf, LimitNOFILE= for systemd, "
        "`--ulimit nofile={}:{}` for docker)",
        need, need, need);
    return c;
  }
  c.finding = fmt::format(
      "open-file limit soft {}, hard {}: enough for a store serving {} ranks (`ddp-launch store` raises its soft "
      "limit to the hard one)",
      soft, hard, kLargeRendezvousRanks);
  if (soft < need) {
    c.action = fmt::format(
        "Workers keep the soft limit and gloo opens a socket per peer: for worlds over about {} ranks run "
        "`ulimit -n {}` before launching",
        ranks(soft), hard);
  }
  return c;
}

DoctorCheck check_nofile() {
  std::string why;
  auto lim = proc::open_file_limit(why);
  if (!lim && why.empty()) {
    return {Status::Ok, "nofile",
            "no open-file limit of that kind here (Windows: sockets and files are handles, 2^24 per process)", ""};
  }
  if (!lim)
    return {Status::Warn, "nofile", fmt::format("the open-file limit could not be read: {}", why), "Check `ulimit -n`"};
  return judge_nofile(lim->soft, lim->hard);
}

// ---- python and torch -----------------------------------------------------------------------

using ProbeRun = CommandRun;

// The last few lines of what the interpreter printed, on one line.
std::string tail_of(const std::string& output, std::size_t max_lines = 3) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < output.size()) {
    auto nl = output.find('\n', start);
    auto line = output.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!line.empty()) lines.push_back(line);
    start = nl == std::string::npos ? output.size() : nl + 1;
  }
  if (lines.size() > max_lines) lines.erase(lines.begin(), lines.end() - static_cast<long>(max_lines));
  return fmt::format("{}", fmt::join(lines, " | "));
}

// `answered`: the interpreter ran the probe, so installing torch into it is a fix too.
std::string python_fix(const std::string& interpreter, bool answered) {
  std::string fix = "Pass `--python` an interpreter that has torch with gloo";
  if (interpreter != kSystemPython && platform::find_program(kSystemPython)) {
    fix += fmt::format(" (e.g. `--python {}`; doctor checks it the same way)", kSystemPython);
  }
  if (answered) fix += fmt::format(", or install torch into it (`{} -m pip install torch`)", interpreter);
  return fix + fmt::format("; `ddp-launch run` takes the same --python (or ${})", env::kPythonExec);
}

DoctorCheck judge_python(const std::string& given, const std::string& interpreter, const ProbeRun& run,
                         std::chrono::milliseconds timeout) {
  DoctorCheck c{Status::Fail, "python", "", python_fix(interpreter, false), {{"interpreter", interpreter}}};
  const std::string who = given == interpreter ? interpreter : fmt::format("{} ({})", given, interpreter);
  if (!run.started) {
    c.finding = fmt::format("{} could not be started: {}", who, run.start_error);
    return c;
  }
  if (run.timed_out) {
    c.finding = fmt::format(
        "{} did not finish `import torch; torch.distributed.is_gloo_available()` within {} s and was "
        "killed",
        who, std::chrono::duration<double>(timeout).count());
    c.action = fmt::format(
        "A loaded machine can make the torch import slow: retry with a longer --python-timeout; if it hangs again, "
        "run `{} -c 'import torch'` by hand",
        interpreter);
    return c;
  }
  std::optional<nlohmann::json> report;
  for (std::size_t at = run.output.find(kProbeMarker); at != std::string::npos;
       at = run.output.find(kProbeMarker, at + 1)) {
    auto end = run.output.find('\n', at);
    auto parsed = nlohmann::json::parse(
        run.output.substr(at + std::strlen(kProbeMarker), end - at - std::strlen(kProbeMarker)), nullptr, false);
    if (!parsed.is_discarded() && parsed.is_object()) report = std::move(parsed);
  }
  if (!report) {
    const auto how = exit_predicate(ExitStatus::of(run.exit_code, run.signal));
    const auto said = tail_of(run.output);
    c.finding = fmt::format("{} {} without answering whether it has torch{}", who, how,
                            said.empty() ? " (it printed nothing)" : ": " + said);
    return c;
  }
  c.details["probe"] = *report;
  c.action = python_fix(interpreter, true);
  const auto version = report->value("python", std::string("?"));
  const auto exe = report->value("executable", interpreter);
  const auto where = exe == interpreter ? who : fmt::format("{}, running {}", who, exe);
  if (report->contains("error")) {
    c.finding = fmt::format("{} (Python {}) cannot use torch: {}", where, version, report->value("error", ""));
    return c;
  }
  const auto torch = report->value("torch", std::string("?"));
  c.details["torch"] = torch;
  if (!report->value("distributed", false)) {
    c.finding = fmt::format("{} has torch {} built without torch.distributed", where, torch);
    return c;
  }
  if (!report->value("gloo", false)) {
    c.finding = fmt::format("{} has torch {} but no gloo backend (torch.distributed.is_gloo_available() is False)",
                            where, torch);
    return c;
  }
  c.status = Status::Ok;
  c.action.clear();
  c.finding = fmt::format("{} (Python {}) has torch {} with gloo", where, version, torch);
  return c;
}

DoctorCheck check_python(const std::string& given, std::chrono::milliseconds timeout) {
  std::string interpreter = given;
  if (!platform::names_a_path(given)) {
    auto found = platform::find_program(given);
    if (!found) {
      return {Status::Fail,
              "python",
              fmt::format("{} was not found on PATH", given),
              python_fix(given, false),
              {{"interpreter", given}}};
    }
    interpreter = *found;
  }
  return judge_python(given, interpreter, run_command({interpreter, "-c", kProbeScript}, timeout), timeout);
}

void add_doctor_options(CLI::App& sub, DoctorArgs& a) {
  sub.add_option("--port", a.port, "Store port the job will use (torchrun's default)")->capture_default_str();
  sub.add_option("--python", a.python,
                 "Python interpreter the workers will run (default: as `run` chooses: $PYTHON_EXEC, else the first "
                 "of $VIRTUAL_ENV, $CONDA_PREFIX, python3 on PATH, /usr/bin/python3 that can import torch)");
  sub.add_option("--python-timeout", a.python_timeout_s, "Seconds to wait for the interpreter to import torch")
      ->check(CLI::Range(1.0, 3600.0))
      ->capture_default_str();
  sub.add_option("--filestore", a.filestores,
                 "c10d FileStore files (paths or file:// init_method URLs) to inspect; nothing is removed. Without it, "
                 "doctor lists the stale FileStore files in the temporary directory and those named by dead runs' "
                 "records there");
  sub.add_flag("--json", a.json, "Print one JSON object with an entry per check instead of lines");
  sub.footer(
      "Each check prints `ok|warn|fail  <check>: <finding>. <what to do>`.\n"
      "Exit status: 0 no check failed (warnings allowed); 1 some check failed; 2 bad arguments.");
}

// Every check in order, each handed to `record` as it finishes.
void run_checks(const DoctorArgs& a, std::chrono::milliseconds timeout,
                const std::function<void(DoctorCheck)>& record) {
  // The interpreter `run` would start, chosen the same way (launcher/run/python_choice.hpp).
  const auto facts = launcher::gather_host_facts();
  const auto& env = facts.env;
  std::string python = launcher::named_interpreter(a.python, env);
  if (python.empty()) python = launcher::probe_interpreter(env, timeout).program;

  record(check_port(static_cast<std::uint16_t>(a.port)));
  for (const auto& f : a.filestores) record(check_filestore(f));
  if (a.filestores.empty()) {
    for (auto& c : check_left_filestores(facts.temp_dir)) record(std::move(c));
  }
  record(judge_gpus(gpu::count_gpus(), gpu::nvml_library_name()));
  const char* omp = std::getenv(std::string(env::kOmpNumThreads).c_str());
  record(judge_omp(omp ? std::optional<std::string>(omp) : std::nullopt,
                   std::max(1u, std::thread::hardware_concurrency())));
  record(check_nofile());
  if (facts.windows) record(check_hostname());
  record(check_python(python, timeout));
}

// The tally (a line, or the JSON object with every check) and the exit status.
int print_summary(const std::vector<DoctorCheck>& checks, bool json) {
  int counts[3] = {0, 0, 0};
  for (const auto& c : checks) ++counts[static_cast<int>(c.status)];
  const int code = counts[static_cast<int>(Status::Fail)] > 0 ? kExitFailed : kExitHealthy;
  if (json) {
    nlohmann::json out = {{"exit_code", code},
                          {"ok", counts[0]},
                          {"warn", counts[1]},
                          {"fail", counts[2]},
                          {"checks", nlohmann::json::array()}};
    for (const auto& c : checks) out["checks"].push_back(c.to_json());
    fmt::print("{}\n", out.dump(2));
  } else {
    fmt::print("doctor: {} ok, {} warn, {} fail\n", counts[0], counts[1], counts[2]);
  }
  return code;
}

}  // namespace

Command add_doctor_command(CLI::App& app) {
  auto* sub =
      app.add_subcommand("doctor",
                         "Check this machine before a job: store port, stale FileStore files, GPUs, OMP_NUM_THREADS, "
                         "python/torch/gloo, open-file limit");
  auto a = std::make_shared<DoctorArgs>();
  add_doctor_options(*sub, *a);

  auto run = [a]() -> int {
    if (a->port < 1 || a->port > 65535) throw UsageError(fmt::format("--port {} is outside 1..65535", a->port));
    const auto timeout = std::chrono::milliseconds(static_cast<std::int64_t>(a->python_timeout_s * 1000.0));
    std::vector<DoctorCheck> checks;
    run_checks(*a, timeout, [&](DoctorCheck c) {
      // Lines appear as checks finish: the python check can take a while.
      if (!a->json) fmt::print("{}\n", c.line());
      std::fflush(stdout);
      checks.push_back(std::move(c));
    });
    return print_summary(checks, a->json);
  };
  return {sub, run};
}

}  // namespace ddp::cli
