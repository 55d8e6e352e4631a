#pragma once
// EnvExports: the variables one rank needs for init_process_group(init_method="env://") against a
// store that is already running (`ddp-launch store`, or a `run` supervisor's), without a launcher.
// Pure: `ddp-launch env` prints them as shell exports.
//
// torch's env:// reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK. Left there, rank 0 would try
// to *host* a TCPStore on MASTER_PORT, which the running store already holds (bind fails). Two
// torch-internal variables make every rank a plain client, as under torchrun:
// TORCHELASTIC_USE_AGENT_STORE=True, and TORCHELASTIC_RESTART_COUNT, which torch then reads
// unconditionally (its keys go under /worker/attempt_<n>/).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ddp::launcher {

struct EnvExportsInput {
  std::string master_addr = "127.0.0.1";
  std::uint16_t master_port = 0;
  int rank = 0;
  int world_size = 1;
  int local_rank = -1;        // -1: the same as rank (one node)
  int local_world_size = -1;  // -1: the same as world_size
  int restart_count = 0;
};

struct EnvExport {
  std::string name;
  std::string value;
  std::string why;  // one line for the comment beside it
};

// A rank outside 0..world_size-1, a port of 0, an empty host or a local rank outside its world
// is a ddp::UsageError naming the flag of `ddp-launch env` to fix.
std::vector<EnvExport> env_exports(const EnvExportsInput& in);

// "HOST:PORT" (or "[v6]:PORT") → master_addr and master_port of `in`. A missing or bad port is a
// ddp::UsageError naming --store.
void set_store_address(EnvExportsInput& in, std::string_view address);

// `export NAME='value'  # why` lines, values quoted for sh/bash/zsh.
std::string render_sh_exports(const std::vector<EnvExport>& exports);

// cmd.exe: a `rem why` line, then `set "NAME=value"`, for a batch file or, line by line,
// `for /f "delims=" %l in ('ddp-launch env …') do %l`. A value cmd cannot carry literally (", %,
// ^, !, a line break) is a ddp::UsageError naming --shell.
std::string render_cmd_exports(const std::vector<EnvExport>& exports);

// PowerShell: `$env:NAME = 'value'  # why` lines (single quotes: literal), for
// `ddp-launch env … | Out-String | Invoke-Expression`.
std::string render_powershell_exports(const std::vector<EnvExport>& exports);

}  // namespace ddp::launcher
