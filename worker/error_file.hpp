#pragma once
// The error file of torchrun's @record decorator: when a worker dies of an uncaught exception it
// writes TORCHELASTIC_ERROR_FILE, and the supervisor (ours or torchrun) puts the message in its
// failure summary instead of a bare exit code. Layout (torch 1.13 elastic/multiprocessing/errors):
//   {"message": {"message": "<Type>: <what>",
//                "extraInfo": {"py_callstack": "<trace>", "timestamp": "<unix seconds>"}}}
// py_callstack is left out when there is no trace (torchrun then shows the message itself).
#include <cstdint>
#include <optional>
#include <string>

namespace ddp::worker {

struct ErrorRecord {
  std::string message;                   // "<ExceptionType>: <what()>"
  std::optional<std::string> callstack;  // a backtrace, when the exception carried one
  std::int64_t timestamp = 0;            // unix seconds
};

// The JSON text of the file.
std::string error_file_json(const ErrorRecord& record);

// Writes the record to `path` (tmp + rename, so a reader never sees half a file). Returns false
// when it could not (the caller still exits non-zero; the supervisor then reports the exit code).
// Like torch, it does not overwrite a file that is already there: the first error wins.
bool write_error_file(const std::string& path, const ErrorRecord& record);

// TORCHELASTIC_ERROR_FILE from the process environment, or "" when it is unset.
std::string error_file_from_env();

// "std::runtime_error" from a mangled typeid name.
std::string demangle(const char* mangled);

}  // namespace ddp::worker
