#pragma once
// A FileStore file as the cleaner handles it: opened without getting in its users' way, read whole,
// locked the way torch's FileStore locks it, removed while that lock is held.
//
// POSIX: open(O_RDONLY), flock(LOCK_EX|LOCK_NB) — torch's FileStore flocks the whole file — and
// unlink. Windows: CreateFile sharing read, write and delete; LockFileEx on byte 0 (torch's
// Windows flock emulation locks that one byte); DeleteFile, which fails while another process has
// the file open without sharing delete — torch's FileStore users do, for the length of a store
// operation: the "file locked by another process" of the seed's troubleshooting list.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "platform/native_handle.hpp"

namespace ddp::platform {

// Which file a name leads to (POSIX: device and inode; Windows: volume serial and file index):
// equal identities are the same file, whatever the names.
struct FileIdentity {
  std::uint64_t device = 0;
  std::uint64_t index = 0;
  bool operator==(const FileIdentity&) const = default;
};
std::optional<FileIdentity> file_identity(const std::filesystem::path& path);

class LockableFile {
 public:
  // nullopt, with `error` saying why (missing, not permitted), when it cannot be opened for reading.
  static std::optional<LockableFile> open(const std::filesystem::path& path, std::string& error);
  LockableFile(LockableFile&& other) noexcept;
  LockableFile& operator=(LockableFile&& other) noexcept;
  LockableFile(const LockableFile&) = delete;
  LockableFile& operator=(const LockableFile&) = delete;
  ~LockableFile();  // closes it, which drops our lock

  FileIdentity identity() const;
  // Its bytes from the start; false with `error` set when reading fails or it holds more than `max`.
  bool read_all(std::string& bytes, std::string& error, std::uint64_t max) const;
  // The exclusive lock torch's FileStore takes, without blocking, tried every `retry` until
  // `timeout`: a blocking lock would hang forever behind a reader spinning on a torn tail.
  bool lock_exclusive_within(std::chrono::milliseconds timeout, std::chrono::milliseconds retry);

 private:
  explicit LockableFile(NativeHandle h) : handle_(h) {}
  // The platform's halves of read_all and lock_exclusive_within (platform/file_lock.cpp has the loops).
  // One positional read of up to `size` bytes at `offset`: how many (0 at the end), or nullopt with
  // `error` set.
  std::optional<std::size_t> read_at(std::uint64_t offset, char* buf, std::size_t size, std::string& error) const;
  enum class TryLock { Locked, Busy, Failed };
  TryLock try_lock_exclusive();  // without waiting

  NativeHandle handle_ = kNoHandle;
};

struct RemoveResult {
  bool removed = false;
  bool in_use = false;  // Windows: another process has it open without sharing delete
  std::string error;    // why not, in words
};
RemoveResult remove_file(const std::filesystem::path& path);

// Whether another process can learn who holds a lock on a file (Linux: /proc/locks; Windows: no).
bool lock_holders_visible();

}  // namespace ddp::platform
