#pragma once
// Typed errors: the message names what went wrong and what to do about it.
#include <stdexcept>
#include <string>

namespace ddp {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad user input (flags, files, arguments): reported without a stack of context, exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

}  // namespace ddp
