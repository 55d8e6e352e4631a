#include "slurm/slurm.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>

#include "common/env_contract.hpp"
#include "common/error.hpp"

namespace ddp::slurm {
namespace {

// Far more names than any cluster has: a typo such as n[1-999999999] fails instead of eating memory.
constexpr std::size_t kMaxNodes = 1'000'000;

[[noreturn]] void bad_list(std::string_view list, std::size_t pos, std::string_view why) {
  throw UsageError(
      fmt::format("node list '{}': {} at position {} (expected names like n[01-03,7],a1,b[2-3])", list, why, pos + 1));
}

bool all_digits(std::string_view s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

// One bracket group "01-03,7" → the strings it stands for, zero padding kept.
std::vector<std::string> expand_group(std::string_view list, std::string_view group, std::size_t at) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    auto comma = group.find(',', start);
    auto part = group.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    std::size_t part_at = at + start;
    if (part.empty()) bad_list(list, part_at, "empty range inside []");
    auto dash = part.find('-');
    auto lo_s = part.substr(0, dash);
    auto hi_s = dash == std::string_view::npos ? lo_s : part.substr(dash + 1);
    if (!all_digits(lo_s) || !all_digits(hi_s)) {
      bad_list(list, part_at, fmt::format("'{}' is not a number or a range N-M", part));
    }
    if (lo_s.size() > 9 || hi_s.size() > 9) bad_list(list, part_at, fmt::format("'{}' has too many digits", part));
    unsigned long lo = 0, hi = 0;
    std::from_chars(lo_s.data(), lo_s.data() + lo_s.size(), lo);
    std::from_chars(hi_s.data(), hi_s.data() + hi_s.size(), hi);
    if (hi < lo) bad_list(list, part_at, fmt::format("range '{}' runs backwards", part));
    if (hi - lo + out.size() >= kMaxNodes) {
      bad_list(list, part_at, fmt::format("range '{}' expands to more than {} names", part, kMaxNodes));
    }
    // Slurm pads to the width of the lower bound when it has leading zeros: n[08-10] → n08 n09 n10.
    const std::size_t width = lo_s.size();
    for (unsigned long n = lo; n <= hi; ++n) out.push_back(fmt::format("{:0{}}", n, width));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// One top-level item such as "rack[1-2]-n[01-02]" → its names (cartesian product, left slowest).
void expand_item(std::string_view list, std::string_view item, std::size_t at, std::vector<std::string>& out) {
  std::vector<std::string> names{""};
  std::size_t i = 0;
  while (i < item.size()) {
    if (item[i] == ']') bad_list(list, at + i, "']' without '['");
    if (item[i] != '[') {
      auto next = item.find_first_of("[]", i);
      auto text = item.substr(i, next == std::string_view::npos ? std::string_view::npos : next - i);
      for (auto& n : names) n += text;
      i += text.size();
      continue;
    }
    auto close = item.find(']', i + 1);
    if (close == std::string_view::npos) bad_list(list, at + i, "'[' is never closed");
    auto group = item.substr(i + 1, close - i - 1);
    if (group.find('[') != std::string_view::npos) bad_list(list, at + i + 1 + group.find('['), "nested '['");
    if (group.empty()) bad_list(list, at + i, "empty []");
    auto values = expand_group(list, group, at + i + 1);
    if (names.size() * values.size() + out.size() > kMaxNodes) {
      bad_list(list, at + i, fmt::format("expands to more than {} names", kMaxNodes));
    }
    std::vector<std::string> next;
    next.reserve(names.size() * values.size());
    for (const auto& n : names) {
      for (const auto& v : values) next.push_back(n + v);
    }
    names = std::move(next);
    i = close + 1;
  }
  for (auto& n : names) out.push_back(std::move(n));
}

std::optional<std::string> get(const EnvMap& env, std::string_view name) {
  auto it = env.find(std::string(name));
  if (it == env.end()) return std::nullopt;
  return it->second;
}

int get_int(const EnvMap& env, std::string_view name, int fallback, int min) {
  auto v = get(env, name);
  if (!v) return fallback;
  int n = 0;
  auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
  if (ec != std::errc{} || end != v->data() + v->size() || n < min) {
    throw UsageError(fmt::format("{}='{}' is not a number >= {}; is this really an srun task?", name, *v, min));
  }
  return n;
}

}  // namespace

std::vector<std::string> expand_nodelist(std::string_view list) {
  if (list.empty()) throw UsageError("node list is empty (expected names like n[01-03,7],a1,b[2-3])");
  if (auto ws = list.find_first_of(" \t\r\n"); ws != std::string_view::npos) bad_list(list, ws, "whitespace");
  std::vector<std::string> out;
  std::size_t start = 0;
  int depth = 0;
  for (std::size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] == '[') ++depth;
    if (i < list.size() && list[i] == ']') --depth;
    if (i < list.size() && (list[i] != ',' || depth > 0)) continue;
    // A top-level comma (or the end): one item. Bracket errors are found by expand_item.
    auto item = list.substr(start, i - start);
    if (item.empty()) bad_list(list, start, "empty name");
    expand_item(list, item, start, out);
    start = i + 1;
  }
  return out;
}

std::optional<SlurmTask> read_slurm_env(const EnvMap& env) {
  auto job = get(env, env::kSlurmJobId);
  if (!job) return std::nullopt;
  if (job->empty()) throw UsageError(fmt::format("{} is set but empty", env::kSlurmJobId));
  SlurmTask t;
  t.job_id = *job;
  t.step_id = get(env, env::kSlurmStepId);
  // Inside a step the step's values; in a batch script or salloc shell the job's.
  const bool step_nodes = get(env, env::kSlurmStepNumNodes).has_value();
  t.nnodes = get_int(env, step_nodes ? env::kSlurmStepNumNodes : env::kSlurmNnodes, 1, 1);
  t.node_id = get_int(env, env::kSlurmNodeId, 0, 0);
  const bool step_tasks = get(env, env::kSlurmStepNumTasks).has_value();
  t.ntasks = get_int(env, step_tasks ? env::kSlurmStepNumTasks : env::kSlurmNtasks, t.nnodes, 1);
  t.local_id = get_int(env, env::kSlurmLocalId, 0, 0);
  auto list_var = get(env, env::kSlurmStepNodelist) ? env::kSlurmStepNodelist : env::kSlurmJobNodelist;
  auto list = get(env, list_var);
  if (!list) {
    throw UsageError(fmt::format("{} is set but {} is not: cannot tell which node hosts the store", env::kSlurmJobId,
                                 env::kSlurmJobNodelist));
  }
  t.nodelist = *list;
  try {
    t.nodes = expand_nodelist(*list);
  } catch (const UsageError& e) {
    throw UsageError(fmt::format("{}: {}", list_var, e.what()));
  }
  if (static_cast<int>(t.nodes.size()) != t.nnodes) {
    throw UsageError(fmt::format("{}={} names {} nodes but the step has {}: the Slurm environment is inconsistent",
                                 list_var, *list, t.nodes.size(), t.nnodes));
  }
  if (t.node_id >= t.nnodes) {
    throw UsageError(fmt::format("{}={} is outside 0..{}", env::kSlurmNodeId, t.node_id, t.nnodes - 1));
  }
  return t;
}

std::uint16_t port_for_job(std::string_view job_id, std::string_view step_id) {
  // Numeric ids (always, in practice): consecutive jobs get distinct ports, and up to 16 steps of
  // one job too. Anything else: FNV-1a of the text.
  auto number = [](std::string_view s) -> std::optional<std::uint64_t> {
    std::uint64_t n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
    return n;
  };
  auto hash = [](std::string_view s) {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
  };
  std::uint64_t job = number(job_id).value_or(hash(job_id));
  std::uint64_t step = step_id.empty() ? 0 : number(step_id).value_or(hash(step_id));
  return static_cast<std::uint16_t>(kPortBase + (job * 16 + step % 16) % kPortSpan);
}

SlurmTopology plan_from_slurm(const SlurmTask& t, const ExplicitFlags& given) {
  SlurmTopology out;
  if (given.standalone) {
    out.summary = fmt::format("Slurm job {}: --standalone given, running on this node alone", t.job_id);
    return out;
  }
  if (!t.step_id) {
    // The batch script (or an salloc shell) runs on the first node only: Slurm's node count would
    // make node 0 wait for nodes that never start.
    if (t.nnodes > 1 && !given.nnodes) {
      out.summary = fmt::format(
          "inside Slurm job {} ({} nodes) but not in an srun step: running on this node only. Start it as "
          "`srun --ntasks-per-node=1 ddp-launch run ...` to use all {} nodes",
          t.job_id, t.nnodes, t.nnodes);
      out.warning = true;
    }
    return out;
  }
  if (t.ntasks > t.nnodes && !given.node_rank) {
    throw UsageError(fmt::format(
        "srun started {} tasks on {} node(s) (this is task {} on its node, SLURM_LOCALID): each would start its own "
        "group of ranks. Run one ddp-launch per node: srun --ntasks-per-node=1 (or #SBATCH --ntasks-per-node=1); "
        "--nproc-per-node sets the ranks per node",
        t.ntasks, t.nnodes, t.local_id));
  }
  std::vector<std::string> taken, kept;
  if (given.nnodes) {
    kept.push_back("--nnodes");
  } else {
    out.nnodes = t.nnodes;
    taken.push_back(fmt::format("nnodes {}", t.nnodes));
  }
  if (given.node_rank) {
    kept.push_back("--node-rank");
  } else {
    out.node_rank = t.node_id;
    taken.push_back(fmt::format("node rank {}", t.node_id));
  }
  if (given.master_addr) {
    kept.push_back("--master-addr");
  } else {
    out.master_node = t.nodes.front();
    taken.push_back(fmt::format("store host {} (first of {})", t.nodes.front(), t.nodelist));
  }
  if (given.master_port) {
    kept.push_back("--master-port");
  } else {
    out.master_port = port_for_job(t.job_id, *t.step_id);
    taken.push_back(fmt::format("port {} (from job {} step {})", *out.master_port, t.job_id, *t.step_id));
  }
  if (given.rdzv_id) {
    kept.push_back("--rdzv-id");
  } else {
    out.rdzv_id = t.job_id;
    taken.push_back(fmt::format("rdzv id {}", t.job_id));
  }
  out.summary = fmt::format("Slurm job {} step {}: {}", t.job_id, *t.step_id,
                            taken.empty() ? std::string("nothing taken") : fmt::format("{}", fmt::join(taken, ", ")));
  if (!kept.empty()) out.summary += fmt::format("; kept from flags: {}", fmt::join(kept, " "));
  return out;
}

}  // namespace ddp::slurm

namespace ddp::slurm {

std::optional<std::string> node_addr_from_scontrol(std::string_view line) {
  std::size_t pos = 0;
  while (pos < line.size()) {
    auto start = line.find_first_not_of(" \t\n", pos);
    if (start == std::string_view::npos) break;
    auto end = line.find_first_of(" \t\n", start);
    auto word = line.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    if (word.rfind("NodeAddr=", 0) == 0 && word.size() > 9) return std::string(word.substr(9));
    pos = end == std::string_view::npos ? line.size() : end;
  }
  return std::nullopt;
}

}  // namespace ddp::slurm
