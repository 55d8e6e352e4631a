#pragma once
// Hints the failure summary adds when a rank's last words show a cause the user fixes with a flag.
#include <optional>
#include <string>
#include <vector>

namespace ddp::launcher {

// The rank could not import torch (`ModuleNotFoundError: No module named 'torch'`, a torch
// submodule, or torch's own libraries failing to load): the interpreter that ran it lacks a
// working torch. `worker_argv` is what the supervisor started (the interpreter first, unless
// --no-python). nullopt when the stderr tail shows no such error.
std::optional<std::string> missing_torch_hint(const std::vector<std::string>& stderr_tail,
                                              const std::vector<std::string>& worker_argv);

}  // namespace ddp::launcher
