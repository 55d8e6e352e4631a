#pragma once
// Slurm → launch topology. Pure: the SLURM_* environment of an srun task in, node count, node
// rank, store host and port, run id out. The shell (slurm_resolve.cpp) turns the store host's
// Slurm node name into an address.
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::slurm {

// A process environment (launcher/workers/worker_env.hpp has the same alias, a layer above).
using EnvMap = std::map<std::string, std::string>;

// Expands a Slurm hostlist such as "n[01-03,7]", "a1,b[2-3]" or "rack[1-2]-n[01-02]" into node
// names, in Slurm's order (the leftmost bracket group varies slowest). Zero padding is kept
// ("n[08-10]" → n08 n09 n10). Throws UsageError naming the position of malformed input
// (unbalanced or nested brackets, empty or descending ranges, non-digits in a range, empty items).
std::vector<std::string> expand_nodelist(std::string_view list);

// The SLURM_* variables of one task, checked. Node count, node index and node list are the
// *step's* (SLURM_STEP_NODELIST, SLURM_STEP_NUM_NODES, SLURM_NODEID): an `srun -N1` inside a
// two-node job sees the whole allocation in SLURM_JOB_NODELIST but runs on the step's node only.
struct SlurmTask {
  std::string job_id;
  std::optional<std::string> step_id;  // absent: the batch script or an salloc shell, not srun
  int nnodes = 1;
  int node_id = 0;
  int ntasks = 1;
  int local_id = 0;
  std::vector<std::string> nodes;  // expanded node list, nodes[0] hosts the store
  std::string nodelist;            // as Slurm wrote it (for messages)
};

// nullopt when SLURM_JOB_ID is unset (not under Slurm). Throws UsageError naming the variable
// when one is malformed or they contradict each other.
std::optional<SlurmTask> read_slurm_env(const EnvMap& env);

// The store port for a job step when --master-port is not given: every node computes the same
// one from the job and step ids. In [kPortBase, kPortBase + kPortSpan), below Linux's ephemeral
// range (32768+) so no outgoing connection of the node can be holding it.
inline constexpr int kPortBase = 20000;
inline constexpr int kPortSpan = 10000;
std::uint16_t port_for_job(std::string_view job_id, std::string_view step_id);

// Which topology flags the user gave (on the command line or as PET_*): those win over Slurm.
struct ExplicitFlags {
  bool nnodes = false;
  bool node_rank = false;
  bool master_addr = false;  // --master-addr or the host of --rdzv-endpoint
  bool master_port = false;  // --master-port or the port of --rdzv-endpoint
  bool rdzv_id = false;
  bool standalone = false;
};

// What Slurm decides; a field is empty when an explicit flag keeps its own value (or, outside an
// srun step, when Slurm has nothing to say).
struct SlurmTopology {
  std::optional<int> nnodes;
  std::optional<int> node_rank;
  std::optional<std::string> master_node;  // Slurm node name; the shell resolves it
  std::optional<std::string> master_addr;  // its address (set by topology_from_environment)
  std::optional<std::uint16_t> master_port;
  std::optional<std::string> rdzv_id;
  std::string summary;   // one log line: what was taken from Slurm and what was kept
  bool warning = false;  // summary is a warning (Slurm seen but not used)
};

// Throws UsageError when srun started several tasks per node (each would start its own group of
// ranks): the supervisor must run once per node (srun --ntasks-per-node=1).
SlurmTopology plan_from_slurm(const SlurmTask& task, const ExplicitFlags& given);

}  // namespace ddp::slurm

namespace ddp::slurm {

// NodeAddr from one line of `scontrol -o show node NAME`; nullopt when the line has none.
std::optional<std::string> node_addr_from_scontrol(std::string_view line);

// Shell (slurm_resolve.cpp): the address other nodes reach `node` at, for MASTER_ADDR. Its IPv4
// address if the name resolves (the store listens on 0.0.0.0), else the NodeAddr Slurm knows it by
// (`scontrol -o show node`, within `timeout`): emulated nodes and clusters whose node names are not
// in DNS. Throws UsageError naming both attempts and the fix (--master-addr) when neither works.
std::string resolve_node(const std::string& node, std::chrono::milliseconds timeout);

// Shell: SLURM_* of this process → plan_from_slurm → the store host resolved, the summary logged
// (a warning when Slurm is seen but not used). nullopt outside Slurm.
std::optional<SlurmTopology> topology_from_environment(const ExplicitFlags& given);

}  // namespace ddp::slurm
