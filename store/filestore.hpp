#pragma once
// c10d FileStore forensics, pure: what a FileStore file holds (FileStoreLog) and whether it is
// safe to remove (diagnose → FileStoreDiagnosis). No files, no /proc, no clocks: the shell
// (filestore_cleaner.hpp) reads the bytes and gathers the evidence, and passes both in as values.
//
// The file is a bare append-only log (spec §11.1): u32 LE key length | key | u32 LE value
// length | value, replayed from offset 0, last write wins. torch writes a record with four
// separate write() calls, so a SIGKILL or a full disk can leave the last record cut short (a
// "torn tail"); torch's reader then spins forever at 100% CPU holding LOCK_SH (spec §11.4).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "platform/proc.hpp"

namespace ddp::store {

struct FileStoreRecord {
  std::uint64_t offset = 0;
  std::string key;
  std::string value;
};

enum class RecordPart { KeyLength, Key, ValueLength, Value };
std::string_view to_string(RecordPart part);

struct TornTail {
  std::uint64_t offset = 0;                    // where the incomplete record starts: truncating here repairs the log
  RecordPart missing = RecordPart::KeyLength;  // the first part not wholly in the file
  std::uint64_t needed = 0;                    // bytes that part needs
  std::uint64_t present = 0;                   // bytes of it that are there
  std::string partial_key;                     // the key bytes present (all of them once past Key)
  // "at offset 11: the key needs 10 bytes, 6 are present"
  std::string describe() const;
};

// An ASCII decimal counter that torch keeps with add(): cleanup/ and refcount/.
struct FileStoreCounter {
  bool present = false;
  std::optional<std::int64_t> value;  // nullopt when present but not a number
  std::string raw;
};

class FileStoreLog {
 public:
  static FileStoreLog parse(std::string_view bytes);

  std::uint64_t size() const { return size_; }
  const std::vector<FileStoreRecord>& records() const { return records_; }
  // The replayed state, internal keys included: torch's num_keys() counts cleanup/ and refcount/.
  const std::map<std::string, std::string, std::less<>>& live() const { return live_; }
  std::size_t num_keys() const { return live_.size(); }
  std::optional<std::string_view> get(std::string_view key) const;
  // Live keys a user (or a PrefixStore) wrote: those starting with '/'.
  std::vector<std::string_view> user_keys() const;
  std::size_t tombstones() const { return tombstones_; }

  // Instances that ran their destructor (all versions).
  const FileStoreCounter& cleanup() const { return cleanup_; }
  // Instances alive minus destroyed (torch >= 2.x only; 1.13 never writes it).
  const FileStoreCounter& refcount() const { return refcount_; }

  const std::optional<TornTail>& torn_tail() const { return torn_; }

  // Empty when the bytes are a c10d FileStore log; otherwise why they are not one.
  const std::string& foreign_reason() const { return foreign_; }
  bool is_filestore() const { return foreign_.empty(); }

 private:
  std::uint64_t size_ = 0;
  std::vector<FileStoreRecord> records_;
  std::map<std::string, std::string, std::less<>> live_;
  std::size_t tombstones_ = 0;
  FileStoreCounter cleanup_;
  FileStoreCounter refcount_;
  std::optional<TornTail> torn_;
  std::string foreign_;
};

// Whether `key` has a shape FileStore writes: "/<user key>", "-/<user key>" (tombstone),
// "cleanup/" or "refcount/". A partial key (torn tail) is judged on the bytes present.
bool is_filestore_key(std::string_view key, bool partial = false);

// Human-readable lines for what the log holds: size, records, keys with short values, counters,
// torn tail. At most `max_keys` keys are listed.
std::vector<std::string> summarize(const FileStoreLog& log, std::size_t max_keys = 20);

// ---- evidence from outside the file -----------------------------------------------------------

// How torch turns a file:// init_method URL into a path on each OS (torch.distributed.rendezvous).
enum class PathStyle {
  Posix,    // urlparse(url).path: an authority part, as in file://host/p, is dropped
  Windows,  // url2pathname(netloc + path): file:///C:/x/y and file://C:/x/y → C:\x\y; no drive:
            // slashes become backslashes (file:////server/share/f → \\server\share\f)
};
// The path torch opens for an init_method URL; nullopt when `url` is not a file:// URL or has no path.
std::optional<std::string> path_from_file_url(std::string_view url, PathStyle style = PathStyle::Posix);
// The init_method URL of a path: file:///C:/d/f for a Windows drive path (C:\d\f), else file://PATH.
std::string file_url_from_path(std::string_view path);

// Whether one argv entry or environment entry (`text`) names `target`, an absolute, normalized
// path: as a plain path (absolute, or relative to `cwd`, the process's working directory), as a
// file:// URL (query ignored), or as the value of NAME=... . A longer name that merely contains
// the target ("/tmp/rdzv2", "/a/tmp/rdzv") does not count.
// Windows style: file:// URLs read as torch reads them there, no ':'-separated lists (a drive has a
// colon), names compared without regard to case.
bool mentions_path(std::string_view text, const std::filesystem::path& target, const std::filesystem::path& cwd,
                   PathStyle style = PathStyle::Posix);

// One flock from /proc/locks.
struct FlockEntry {
  pid_t pid = 0;
  bool exclusive = false;  // WRITE; false: READ (LOCK_SH)
  bool waiting = false;    // "->": blocked, waiting for the lock rather than holding it
  unsigned dev_major = 0;
  unsigned dev_minor = 0;
  std::uint64_t inode = 0;
};
// The FLOCK lines of /proc/locks (POSIX and OFD locks are left out: torch uses flock).
std::vector<FlockEntry> parse_proc_locks(std::string_view text);
// Whether the entry is on the file with this device number (stat's st_dev, as glibc encodes it)
// and inode.
bool flock_entry_is(const FlockEntry& e, std::uint64_t device, std::uint64_t inode);

struct LockHolder {
  proc::ProcessInfo process;
  bool exclusive = false;
};

struct FileStoreEvidence {
  std::vector<proc::ProcessInfo> open_by;        // have the file open now (/proc/*/fd; Windows: RmGetList)
  std::vector<proc::ProcessInfo> named_in_argv;  // command line names the path or file:// URL
  std::vector<proc::ProcessInfo> named_in_env;   // environment names it
  std::vector<LockHolder> lock_holders;          // hold a flock on it (/proc/locks)
  // The exclusive-lock probe (LOCK_EX|LOCK_NB, retried) was still refused at its deadline.
  bool lock_refused = false;
  // Whether lock holders can be seen at all (Linux: /proc/locks; Windows cannot tell who locks a file).
  bool lock_holders_visible = true;
  std::chrono::milliseconds lock_deadline{0};
  // The file grew or was replaced between the first read and the read under the exclusive lock.
  bool changed_while_checking = false;
  std::optional<std::chrono::milliseconds> since_last_write;  // now - mtime
  std::size_t uninspectable = 0;                              // processes whose argv/environment could not be read
  // Workers of runs whose supervisor is gone that still run, by the runs' records naming this file
  // (the fallback where the OS cannot say who has it open: Windows under Wine).
  std::vector<proc::ProcessInfo> dead_run_workers;
  // Users whose run is dead, and why we know (platform/proc.hpp's orphaned, or the run's record).
  std::map<pid_t, std::string> orphaned;
};

enum class FileStoreVerdict {
  Stale,         // left by a run that is gone: remove it before the next run on this path
  Torn,          // stale and ends in a torn record: remove it (every torch reader would spin forever)
  InUse,         // a live process holds or names it: leave it alone
  StuckReader,   // torn, and a torch reader spins on it holding LOCK_SH: stop that process first
  NotFileStore,  // not a c10d FileStore log: never touched
};
std::string_view to_string(FileStoreVerdict verdict);

struct FileStoreDiagnosis {
  FileStoreVerdict verdict = FileStoreVerdict::Stale;
  std::vector<std::string> reasons;  // why, one fact per entry
  std::string advice;                // what to do next
  // In use, and only by processes of a dead run: what `clean --force` ends before removing it.
  std::vector<pid_t> orphans;
  bool removable() const { return verdict == FileStoreVerdict::Stale || verdict == FileStoreVerdict::Torn; }
};

// The decision: stale / torn / in use / stuck reader / not a FileStore, and why.
FileStoreDiagnosis diagnose(const FileStoreLog& log, const FileStoreEvidence& evidence);

}  // namespace ddp::store
