#pragma once
// File operations whose POSIX and Windows forms differ.
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ddp::platform {

// A new directory `parent`/`prefix`XXXXXX, made atomically with a name no one else got (mkdtemp;
// Windows: CreateDirectory, which fails on an existing name, over random suffixes). Throws
// std::system_error naming what failed.
std::filesystem::path make_unique_directory(const std::filesystem::path& parent, const std::string& prefix);

// Writes `content` to `path`, replacing it, readable and writable by its owner only (POSIX: created
// 0600 and fchmod'ed 0600 should it exist; Windows: a plain write, the directory's ACL governs).
// false with `error` saying why.
bool write_private_file(const std::filesystem::path& path, const std::string& content, std::string& error);

// An exclusive lock on `path` (created 0600), held until the process ends: one holder per file
// (POSIX: flock(LOCK_EX|LOCK_NB); Windows: LockFileEx on a byte past the content, so that the pid
// stays readable through Windows' mandatory locks), and our pid written into it.
enum class ProcessLock { Held, Busy, Failed };
ProcessLock lock_for_process_lifetime(const std::filesystem::path& path, std::string& error);

// A file that another user could have written: one this process must not act on.
class ForeignFile : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The content of `path` when it is this user's own: a regular file (no link, no FIFO) owned by this
// process's user, in a directory owned by this user or by root (a shared temporary directory), so
// that no other local user can have planted or replaced it. nullopt when there is no such file;
// ForeignFile naming the owner when it is someone else's. POSIX: the opened file's and its
// directory's owner uid against geteuid(). Windows: the opened file's (no link: a reparse point is
// refused) and its directory's owner SIDs, decided by foreign_owner: the directory this user's or
// an administrator's own (Administrators, LocalSystem: C:\Windows\Temp), the file this user's (or,
// to a member of Administrators, the Administrators group's: what an elevated process creates); an
// owner that cannot be read is never trusted.
std::optional<std::string> read_own_file(const std::filesystem::path& path);

// read_own_file's decision from the owners alone (pure). Owners as the OS names them (POSIX: a uid;
// Windows: a SID string, "S-1-5-21-…"); "" is an owner that could not be read, never trusted.
struct FileOwners {
  std::string file;
  std::string dir;
};
struct OwnerPolicy {
  std::string me;                         // this process's user ("": unreadable, nothing trusted)
  std::vector<std::string> admin_owners;  // the administrator's own (POSIX: "0"; Windows: S-1-5-32-544, S-1-5-18)
  bool i_am_admin = false;                // this process is one of them: their files are its own
};
// nullopt: the file is this user's own; else why not (naming the owner), for ForeignFile.
std::optional<std::string> foreign_owner(const std::filesystem::path& path, const FileOwners& owners,
                                         const OwnerPolicy& policy);

// When the file at `path` was created (its birth time), in seconds since the epoch; nullopt where
// the filesystem does not keep one (Linux: statx's STATX_BTIME, absent on some filesystems;
// Windows: the creation time) or the file cannot be read.
std::optional<double> file_birth_time(const std::filesystem::path& path);

}  // namespace ddp::platform
