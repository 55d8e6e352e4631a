#pragma once
// What the job manager refuses, as domain errors: the API layer (api_request.hpp) decides how
// each kind is answered (an HTTP status), the manager knows nothing of HTTP.
#include <stdexcept>
#include <string>

namespace ddp::jobs {

enum class JobErrorKind {
  NotFound,     // no job with that id
  Conflict,     // the job's state does not allow it (cancel of a finished job)
  DoesNotFit,   // a request this host can never satisfy (more slots or GPUs than it has)
  Unavailable,  // the daemon cannot take it now (its state directory is full): try again later
};

// `message` is the whole text: what() is a C string, cut at the first NUL a client's bytes may
// have put in it.
struct JobError : std::runtime_error {
  JobError(JobErrorKind k, const std::string& m) : std::runtime_error(m), kind(k), message(m) {}
  JobErrorKind kind;
  std::string message;
};

}  // namespace ddp::jobs
