#pragma once
// The error file of torchrun's @record decorator: when a worker dies of an uncaught exception it
// writes TORCHELASTIC_ERROR_FILE, and the supervisor (ours or torchrun) puts the message in its
// failure summary instead of a bare exit code. Layout (torch 1.13 elastic/multiprocessing/errors):
//   {"message": {"message": "<Type>: <what>",
//                "extraInfo": {"py_callstack": "<trace>", "timestamp": "<unix seconds>",
//                              "peer_failure": <bool>}}}
// py_callstack is left out when there is no trace (torchrun then shows the message itself).
// peer_failure is ours (common/peer_failure.hpp): true when this rank failed only because a peer
// went away, so the supervisor names the peer that failed as the root cause even when both exit
// together. torch reads only message, timestamp and py_callstack; the extra key rides along.
#include <cstdint>
#include <optional>
#include <string>

namespace ddp::worker {

struct ErrorRecord {
  std::string message;                   // "<ExceptionType>: <what()>"
  std::optional<std::string> callstack;  // a backtrace, when the exception carried one
  std::int64_t timestamp = 0;            // unix seconds
  // The rank failed only because a peer went away; nullopt: decided from the message
  // (ddp::mentions_lost_peer: "Connection closed by peer", "Connection reset by peer", …).
  std::optional<bool> peer_failure;
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
