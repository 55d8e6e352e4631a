// The platform-independent part of platform/file_lock.hpp.
#include "platform/file_lock.hpp"

#include <utility>

namespace ddp::platform {

LockableFile::LockableFile(LockableFile&& other) noexcept : handle_(std::exchange(other.handle_, kNoHandle)) {}

LockableFile& LockableFile::operator=(LockableFile&& other) noexcept {
  if (this != &other) {
    close_handle(handle_);
    handle_ = std::exchange(other.handle_, kNoHandle);
  }
  return *this;
}

LockableFile::~LockableFile() { close_handle(handle_); }  // closing also drops our lock

}  // namespace ddp::platform
