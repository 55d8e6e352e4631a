#pragma once
// SbatchScript: `ddp-launch sbatch` options → the text of an sbatch script that starts one
// `ddp-launch run` supervisor per node (srun --ntasks-per-node=1) with the same run options. Pure.
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::slurm {

struct SbatchScript {
  std::string job_name;                  // #SBATCH --job-name
  std::string nodes = "1";               // #SBATCH --nodes: N or MIN-MAX
  std::string output;                    // #SBATCH --output (Slurm patterns %j %x ...); empty: %x-%j.out
  std::string time;                      // #SBATCH --time; empty: the partition's default
  std::string partition;                 // #SBATCH --partition
  std::string account;                   // #SBATCH --account
  std::string qos;                       // #SBATCH --qos
  std::string chdir;                     // #SBATCH --chdir; empty: the directory sbatch is called from
  std::vector<std::string> extra;        // raw sbatch options, one "#SBATCH <option>" line each
  std::string launcher;                  // ddp-launch as the compute nodes see it (absolute path)
  std::vector<std::string> run_options;  // `ddp-launch run` options, as given
  std::vector<std::string> command;      // the script (or program) and its arguments

  // `export NAME=value` lines before srun (srun passes them on to every node's supervisor).
  std::map<std::string, std::string> env;
};

// A `run` option given to `ddp-launch sbatch`, as run spells it: "--max-restarts" with its value,
// or a flag (no value).
struct GivenRunOption {
  std::string name;
  bool flag = false;
  std::string value;
};

// Puts the run options, in order, into s.run_options, except --nnodes, which becomes s.nodes
// (under srun every supervisor takes the node count from Slurm). Throws UsageError for --node-rank
// (every node takes its rank from Slurm) and for an --nnodes that is not N or MIN:MAX.
void set_run_options(SbatchScript& s, const std::vector<GivenRunOption>& given);

// Throws UsageError when a value would break the script (a newline, whitespace in a directive
// value) or something required is missing (launcher, a script to run).
std::string render_sbatch_script(const SbatchScript& s);

// POSIX shell single-quoting: the word reaches the program unchanged, whatever it contains.
std::string shell_quote(std::string_view word);

// --nnodes of `run` → #SBATCH --nodes: "2" → "2", "2:2" → "2", "2:4" → "2-4".
std::string sbatch_nodes(std::string_view nnodes);

// A job name from the script path: "examples/train.py" → "train"; [A-Za-z0-9_.-] only.
std::string job_name_from_script(std::string_view script);

// The job id from `sbatch --parsable` ("123" or "123;cluster"); throws Error when there is none.
std::string job_id_from_parsable(std::string_view output);

}  // namespace ddp::slurm
