// The platform-independent part of platform/file_lock.hpp.
#include "platform/file_lock.hpp"

#include <string>
#include <thread>
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

bool LockableFile::read_all(std::string& bytes, std::string& error, std::uint64_t max) const {
  bytes.clear();
  char buf[64 * 1024];
  std::uint64_t at = 0;
  for (;;) {
    auto n = read_at(at, buf, sizeof buf, error);
    if (!n) return false;
    if (*n == 0) return true;
    bytes.append(buf, *n);
    at += *n;
    if (at > max) {
      error = "larger than " + std::to_string(max) + " bytes, far more than a FileStore holds";
      return false;
    }
  }
}

bool LockableFile::lock_exclusive_within(std::chrono::milliseconds timeout, std::chrono::milliseconds retry) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    switch (try_lock_exclusive()) {
      case TryLock::Locked: return true;
      case TryLock::Failed: return false;
      case TryLock::Busy: break;
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(retry);
  }
}

}  // namespace ddp::platform
