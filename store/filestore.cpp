#include "store/filestore.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <vector>

namespace ddp::store {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kCleanupKey = "cleanup/";
constexpr std::string_view kRefcountKey = "refcount/";
// A first record that declares a longer key than this, with nothing else in the file, is not a
// torn FileStore record but some other file: torch's keys are short ("/default_pg/0/0/0").
constexpr std::uint64_t kPlausibleFirstKeyBytes = 64 * 1024;

std::uint32_t read_u32_le(std::string_view bytes, std::size_t at) {
  auto b = [&](std::size_t i) { return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[at + i])); };
  return b(0) | (b(1) << 8) | (b(2) << 16) | (b(3) << 24);
}

std::string printable(std::string_view s, std::size_t max = 64) {
  std::string out;
  for (char ch : s.substr(0, max)) {
    auto u = static_cast<unsigned char>(ch);
    out += (u >= 0x20 && u < 0x7f) ? std::string(1, ch) : fmt::format("\\x{:02x}", u);
  }
  if (s.size() > max) out += "...";
  return out;
}

bool is_text(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    auto u = static_cast<unsigned char>(ch);
    return u >= 0x20 && u < 0x7f;
  });
}

std::string show_value(std::string_view v) {
  if (is_text(v) && v.size() <= 48) return fmt::format("\"{}\"", v);
  return fmt::format("<{} bytes>", v.size());
}

// torch's add() reads the stored total back with stoll: decimal digits, optional sign.
std::optional<std::int64_t> parse_counter(std::string_view s) {
  std::int64_t v = 0;
  const char* begin = s.data();
  if (!s.empty() && s.front() == '+') ++begin;
  auto [p, ec] = std::from_chars(begin, s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || begin == s.data() + s.size()) return std::nullopt;
  return v;
}

FileStoreCounter make_counter(const std::map<std::string, std::string, std::less<>>& live, std::string_view key) {
  FileStoreCounter c;
  auto it = live.find(key);
  if (it == live.end()) return c;
  c.present = true;
  c.raw = it->second;
  c.value = parse_counter(it->second);
  return c;
}

std::string plural(std::size_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string who(const proc::ProcessInfo& p) {
  return fmt::format("pid {} ({})", p.pid, p.cmdline.empty() ? "?" : printable(p.cmdline, 120));
}

std::string pids(const std::vector<pid_t>& list) {
  std::string out;
  for (auto pid : list) out += (out.empty() ? "" : " ") + std::to_string(pid);
  return out;
}

bool is_stop_char(char ch) {
  return std::isspace(static_cast<unsigned char>(ch)) ||
         std::string_view("=\"',;()[]{}<>|&").find(ch) != std::string_view::npos;
}

}  // namespace

std::string_view to_string(RecordPart part) {
  switch (part) {
    case RecordPart::KeyLength: return "key length";
    case RecordPart::Key: return "key";
    case RecordPart::ValueLength: return "value length";
    case RecordPart::Value: return "value";
  }
  return "?";
}

std::string TornTail::describe() const {
  std::string what = fmt::format("at offset {}: the {} needs {} bytes, {} {} present", offset, to_string(missing),
                                 needed, present, present == 1 ? "is" : "are");
  if (!partial_key.empty()) what += fmt::format(" (key \"{}\")", printable(partial_key));
  return what;
}

bool is_filestore_key(std::string_view key, bool partial) {
  auto fits = [&](std::string_view shape) {
    return partial ? shape.substr(0, key.size()) == key.substr(0, shape.size()) : key == shape;
  };
  if (partial && key.empty()) return true;
  if (!key.empty() && key.front() == '/') return true;
  if (key.size() >= 2 && key.substr(0, 2) == "-/") return true;
  if (partial && key == "-") return true;
  return fits(kCleanupKey) || fits(kRefcountKey);
}

FileStoreLog FileStoreLog::parse(std::string_view bytes) {
  FileStoreLog log;
  log.size_ = bytes.size();
  std::size_t pos = 0;
  const std::size_t n = bytes.size();
  auto torn = [&](std::size_t start, RecordPart part, std::uint64_t needed, std::uint64_t present,
                  std::string partial_key) {
    log.torn_ = TornTail{start, part, needed, present, std::move(partial_key)};
  };
  while (pos < n) {
    const std::size_t start = pos;
    if (n - pos < 4) {
      torn(start, RecordPart::KeyLength, 4, n - pos, "");
      break;
    }
    const std::uint32_t klen = read_u32_le(bytes, pos);
    pos += 4;
    if (n - pos < klen) {
      torn(start, RecordPart::Key, klen, n - pos, std::string(bytes.substr(pos)));
      break;
    }
    std::string key(bytes.substr(pos, klen));
    pos += klen;
    if (n - pos < 4) {
      torn(start, RecordPart::ValueLength, 4, n - pos, key);
      break;
    }
    const std::uint32_t vlen = read_u32_le(bytes, pos);
    pos += 4;
    if (!is_filestore_key(key)) {
      log.foreign_ = fmt::format(
          "the record at offset {} has key \"{}\", which FileStore never writes (its keys start with '/' or "
          "'-/', or are cleanup/ or refcount/)",
          start, printable(key));
      return log;
    }
    if (n - pos < vlen) {
      torn(start, RecordPart::Value, vlen, n - pos, key);
      break;
    }
    std::string value(bytes.substr(pos, vlen));
    pos += vlen;
    if (key.front() == '-') {
      log.live_.erase(key.substr(1));
      ++log.tombstones_;
    } else {
      log.live_[key] = value;
    }
    log.records_.push_back({start, std::move(key), std::move(value)});
  }

  if (log.torn_) {
    const auto& t = *log.torn_;
    const bool key_cut_short = t.missing == RecordPart::KeyLength || t.missing == RecordPart::Key;
    if (!is_filestore_key(t.partial_key, key_cut_short)) {
      log.foreign_ = fmt::format(
          "the record at offset {} has a key starting \"{}\", which FileStore never writes (its keys start with "
          "'/' or '-/', or are cleanup/ or refcount/)",
          t.offset, printable(t.partial_key, 24));
    } else if (log.records_.empty() && t.missing == RecordPart::KeyLength) {
      log.foreign_ = fmt::format("it is {}, shorter than one record header (4 bytes)", plural(n, "byte", "bytes"));
    } else if (log.records_.empty() && t.missing == RecordPart::Key && t.present == 0 &&
               t.needed > kPlausibleFirstKeyBytes) {
      log.foreign_ = fmt::format("its first record declares a {}-byte key and nothing follows", t.needed);
    }
    if (!log.foreign_.empty()) log.torn_.reset();
  }
  log.cleanup_ = make_counter(log.live_, kCleanupKey);
  log.refcount_ = make_counter(log.live_, kRefcountKey);
  return log;
}

std::optional<std::string_view> FileStoreLog::get(std::string_view key) const {
  auto it = live_.find(key);
  if (it == live_.end()) return std::nullopt;
  return std::string_view(it->second);
}

std::vector<std::string_view> FileStoreLog::user_keys() const {
  std::vector<std::string_view> keys;
  for (const auto& [k, v] : live_) {
    if (!k.empty() && k.front() == '/') keys.push_back(k);
  }
  return keys;
}

std::vector<std::string> summarize(const FileStoreLog& log, std::size_t max_keys) {
  std::vector<std::string> lines;
  if (!log.is_filestore()) {
    lines.push_back(
        fmt::format("{}: not a c10d FileStore log: {}", plural(log.size(), "byte", "bytes"), log.foreign_reason()));
    return lines;
  }
  auto keys = log.user_keys();
  lines.push_back(fmt::format("{}, {} ({}), {} (torch's num_keys() would say {})", plural(log.size(), "byte", "bytes"),
                              plural(log.records().size(), "record", "records"),
                              plural(log.tombstones(), "tombstone", "tombstones"),
                              plural(keys.size(), "live user key", "live user keys"), log.num_keys()));
  std::size_t shown = 0;
  for (auto key : keys) {
    if (shown++ == max_keys) {
      lines.push_back(fmt::format("  ... and {} more", keys.size() - max_keys));
      break;
    }
    lines.push_back(fmt::format("  {} = {}", printable(key), show_value(*log.get(key))));
  }
  auto counter = [](std::string_view name, const FileStoreCounter& c, std::string_view when_absent) {
    if (!c.present) return fmt::format("{} absent ({})", name, when_absent);
    if (!c.value) return fmt::format("{} \"{}\" (not a number)", name, printable(c.raw));
    return fmt::format("{} {}", name, *c.value);
  };
  lines.push_back(counter("cleanup/", log.cleanup(), "no instance has run its destructor"));
  lines.push_back(counter("refcount/", log.refcount(), "torch 1.13 never writes it"));
  lines.push_back(log.torn_tail() ? "torn tail " + log.torn_tail()->describe() : "torn tail: none");
  return lines;
}

// ---- evidence ----------------------------------------------------------------------------------

namespace {

// Python's nturl2path.url2pathname, for what torch does on Windows (no percent-decoding: torch's
// POSIX branch does none either, and paths with '%' are not what jobs use).
std::optional<std::string> windows_url_path(std::string_view url) {
  std::string u(url);
  for (char& c : u) {
    if (c == ':') c = '|';
  }
  auto bar = u.find('|');
  if (bar == std::string::npos) {
    if (u.substr(0, 4) == "////") u.erase(0, 2);
    for (char& c : u) {
      if (c == '/') c = '\\';
    }
    return u.empty() ? std::nullopt : std::optional(u);
  }
  if (bar == 0 || u.find('|', bar + 1) != std::string::npos || !std::isalpha(static_cast<unsigned char>(u[bar - 1]))) {
    return std::nullopt;  // url2pathname raises: not a path
  }
  std::string path = {static_cast<char>(std::toupper(static_cast<unsigned char>(u[bar - 1]))), ':'};
  std::string_view rest = std::string_view(u).substr(bar + 1);
  while (!rest.empty()) {
    auto slash = rest.find('/');
    auto part = rest.substr(0, slash);
    if (!part.empty()) path += "\\" + std::string(part);
    if (slash == std::string_view::npos) break;
    rest.remove_prefix(slash + 1);
  }
  if (path.size() == 2 && !u.empty() && u.back() == '/') path += '\\';
  return path;
}

}  // namespace

std::optional<std::string> path_from_file_url(std::string_view url, PathStyle style) {
  constexpr std::string_view scheme = "file://";
  if (url.substr(0, scheme.size()) != scheme) return std::nullopt;
  auto rest = url.substr(scheme.size());
  rest = rest.substr(0, rest.find_first_of("?#"));
  if (style == PathStyle::Windows) return windows_url_path(rest);  // netloc + path, as torch joins them
  auto slash = rest.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  return std::string(rest.substr(slash));
}

std::string file_url_from_path(std::string_view path) {
  const bool drive = path.size() >= 2 && path[1] == ':' && std::isalpha(static_cast<unsigned char>(path[0]));
  if (!drive) return "file://" + std::string(path);
  std::string url = "file:///" + std::string(path);
  std::replace(url.begin(), url.end(), '\\', '/');
  return url;
}

namespace {

std::string lowercase(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// C:\x, C:/x or \\server\share: not relative to a working directory.
bool windows_absolute(std::string_view p) {
  return (p.size() > 2 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')) || p.substr(0, 2) == "\\\\";
}

// One spelling of a Windows path: backslashes, lower case, "." and ".." resolved.
std::string windows_normal(std::string path) {
  std::replace(path.begin(), path.end(), '/', '\\');
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find('\\', start);
    auto part = path.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part == "..") {
      if (parts.size() > 1) parts.pop_back();
    } else if (part != "." && !(part.empty() && !parts.empty())) {
      parts.push_back(part);
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? "\\" : "") + parts[i];
  return lowercase(out);
}

}  // namespace

bool mentions_path(std::string_view original_text, const fs::path& target, const fs::path& cwd, PathStyle style) {
  const bool windows = style == PathStyle::Windows;
  // Windows: names are compared without regard to case (the file system's rule there).
  const std::string folded = windows ? lowercase(original_text) : std::string();
  const std::string_view text = windows ? std::string_view(folded) : original_text;
  const std::string whole = target.string();
  const std::string name =
      windows ? lowercase(whole.substr(whole.find_last_of("\\/") + 1)) : target.filename().string();
  if (name.empty()) return false;
  for (std::size_t at = text.find(name); at != std::string_view::npos; at = text.find(name, at + 1)) {
    const std::size_t end = at + name.size();
    // The name must end the token (or a URL's path, before its query).
    if (end < text.size() && !is_stop_char(text[end]) && text[end] != '?' && text[end] != '#' && text[end] != ':') {
      continue;
    }
    std::size_t begin = at;
    while (begin > 0 && !is_stop_char(text[begin - 1])) --begin;
    std::string_view token = text.substr(begin, end - begin);
    std::string candidate;
    if (auto url = path_from_file_url(token, style)) {
      candidate = *url;
    } else if (windows) {
      if (token.find("://") != std::string_view::npos) continue;  // another URL's
      candidate = std::string(token);                             // lists are ';'-separated there: a stop char
    } else {
      // PATH-like lists ("a:/tmp/x") and other URLs: only what follows the last ':' can be a path.
      auto colon = token.rfind(':');
      if (colon != std::string_view::npos) {
        if (token.substr(colon).substr(0, 3) == "://") continue;
        token = token.substr(colon + 1);
      }
      candidate = std::string(token);
    }
    if (candidate.empty()) continue;
    if (windows) {
      if (!windows_absolute(candidate)) {
        if (cwd.empty()) continue;
        candidate = cwd.string() + "\\" + candidate;
      }
      if (windows_normal(candidate) == windows_normal(target.string())) return true;
      continue;
    }
    fs::path p(candidate);
    if (p.is_relative()) {
      if (cwd.empty()) continue;
      p = cwd / p;
    }
    if (p.lexically_normal() == target.lexically_normal()) return true;
  }
  return false;
}

std::vector<FlockEntry> parse_proc_locks(std::string_view text) {
  // "1: FLOCK  ADVISORY  READ  1234 08:01:5678 0 EOF"; a waiter has "->" after the number.
  std::vector<FlockEntry> out;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    std::vector<std::string_view> fields;
    for (std::size_t i = 0; i < line.size();) {
      while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      std::size_t j = i;
      while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
      if (j > i) fields.push_back(line.substr(i, j - i));
      i = j;
    }
    FlockEntry e;
    std::size_t f = 1;
    if (fields.size() > f && fields[f] == "->") {
      e.waiting = true;
      ++f;
    }
    if (fields.size() < f + 5 || fields[f] != "FLOCK") continue;
    const auto mode = fields[f + 2];
    if (mode != "READ" && mode != "WRITE") continue;
    e.exclusive = mode == "WRITE";
    auto pid_field = fields[f + 3];
    if (std::from_chars(pid_field.data(), pid_field.data() + pid_field.size(), e.pid).ec != std::errc()) continue;
    auto id = fields[f + 4];  // major:minor:inode, major and minor in hex
    auto c1 = id.find(':');
    auto c2 = id.find(':', c1 == std::string_view::npos ? c1 : c1 + 1);
    if (c1 == std::string_view::npos || c2 == std::string_view::npos) continue;
    auto num = [](std::string_view s, auto& v, int base) {
      return std::from_chars(s.data(), s.data() + s.size(), v, base).ec == std::errc();
    };
    if (!num(id.substr(0, c1), e.dev_major, 16) || !num(id.substr(c1 + 1, c2 - c1 - 1), e.dev_minor, 16) ||
        !num(id.substr(c2 + 1), e.inode, 10)) {
      continue;
    }
    out.push_back(e);
  }
  return out;
}

// glibc's gnu_dev_major/gnu_dev_minor, spelled out: a pure function on every platform.
bool flock_entry_is(const FlockEntry& e, std::uint64_t device, std::uint64_t inode) {
  const auto major = static_cast<unsigned>(((device >> 32) & 0xfffff000u) | ((device >> 8) & 0xfffu));
  const auto minor = static_cast<unsigned>(((device >> 12) & 0xffffff00u) | (device & 0xffu));
  return e.inode == inode && e.dev_major == major && e.dev_minor == minor;
}

// ---- decision ----------------------------------------------------------------------------------

std::string_view to_string(FileStoreVerdict verdict) {
  switch (verdict) {
    case FileStoreVerdict::Stale: return "stale";
    case FileStoreVerdict::Torn: return "torn";
    case FileStoreVerdict::InUse: return "in use";
    case FileStoreVerdict::StuckReader: return "stuck reader";
    case FileStoreVerdict::NotFileStore: return "not a FileStore";
  }
  return "?";
}

namespace {

// The processes that use the file, and which of them spin on its torn tail.
struct FileStoreUsers {
  std::vector<pid_t> spinners;
  std::vector<pid_t> users;

  void add(pid_t pid) {
    if (std::find(users.begin(), users.end(), pid) == users.end()) users.push_back(pid);
  }
};

// One reason per process that holds a lock on it, has it open or names it, in that order.
FileStoreUsers find_users(bool torn, const FileStoreEvidence& ev, std::vector<std::string>& why) {
  FileStoreUsers found;
  for (const auto& h : ev.lock_holders) {
    if (torn && !h.exclusive) {
      found.spinners.push_back(h.process.pid);
      why.push_back(fmt::format(
          "{} holds LOCK_SH on it and the last record is torn: a torch reader stuck in its replay loop, spinning at "
          "100% CPU; it never returns, ignores the store timeout, and blocks every writer",
          who(h.process)));
    } else {
      why.push_back(fmt::format("{} holds {} on it: a store operation is in progress", who(h.process),
                                h.exclusive ? "LOCK_EX" : "LOCK_SH"));
    }
    found.add(h.process.pid);
  }
  for (const auto& p : ev.open_by) {
    why.push_back(fmt::format("{} has it open", who(p)));
    found.add(p.pid);
  }
  for (const auto& p : ev.named_in_argv) {
    why.push_back(fmt::format("{} names it in its command line", who(p)));
    found.add(p.pid);
  }
  for (const auto& p : ev.named_in_env) {
    why.push_back(fmt::format("{} names it in its environment", who(p)));
    found.add(p.pid);
  }
  for (const auto& p : ev.dead_run_workers) {
    why.push_back(fmt::format("{} still runs as a worker of a dead run whose record names this file", who(p)));
    found.add(p.pid);
  }
  return found;
}

// The users that belong to a dead run, said once each; all of them when every user does.
std::vector<pid_t> dead_run_users(const FileStoreUsers& found, const FileStoreEvidence& ev,
                                  std::vector<std::string>& why) {
  std::vector<pid_t> dead;
  for (pid_t pid : found.users) {
    auto it = ev.orphaned.find(pid);
    if (it == ev.orphaned.end()) continue;
    why.push_back(fmt::format("pid {} belongs to a dead run: {}", pid, it->second));
    dead.push_back(pid);
  }
  if (dead.size() != found.users.size()) dead.clear();
  return dead;
}

// The facts that are no single process: the lock probe, a change while checking, the torn tail,
// the file's age, and what could not be inspected.
void note_circumstances(const FileStoreLog& log, const FileStoreEvidence& ev, std::vector<std::string>& why) {
  if (ev.lock_refused && ev.lock_holders_visible) {
    why.push_back(fmt::format(
        "an exclusive flock was still refused after {} ms, yet no process visible here holds one: a user in another "
        "pid namespace or on another host (shared filesystem)",
        ev.lock_deadline.count()));
  } else if (ev.lock_refused) {
    why.push_back(
        fmt::format("an exclusive lock was still refused after {} ms: a process holds one (Windows does not say which)",
                    ev.lock_deadline.count()));
  }
  if (ev.changed_while_checking) {
    why.push_back("it was written to or replaced while being checked: something is using it right now");
  }
  if (const auto& torn = log.torn_tail()) why.push_back("torn tail " + torn->describe());
  if (ev.since_last_write) {
    why.push_back(fmt::format("last written {:.1f} s ago", static_cast<double>(ev.since_last_write->count()) / 1000.0));
  }
  if (ev.uninspectable > 0) {
    why.push_back(
        fmt::format("the environment of {} could not be read (not permitted), so whether they name it is unknown",
                    plural(ev.uninspectable, "process", "processes")));
  }
}

// StuckReader or InUse with its advice; nullopt when nothing uses the file.
std::optional<FileStoreVerdict> verdict_in_use(const FileStoreUsers& found, const FileStoreEvidence& ev,
                                               std::string& advice) {
  if (!found.spinners.empty()) {
    advice = fmt::format(
        "the job reading it can never make progress: stop it (kill {}), then run clean again to remove the file",
        pids(found.spinners));
    return FileStoreVerdict::StuckReader;
  }
  if (found.users.empty() && !ev.lock_refused && !ev.changed_while_checking) return std::nullopt;
  advice = found.users.empty()
               ? std::string("leave it; if its job is gone, run clean again once nothing holds the lock")
               : fmt::format(
                     "leave it; if that job is dead or hung, stop it first (kill {}), then run clean again, or "
                     "give the next run its own path",
                     pids(found.users));
  return FileStoreVerdict::InUse;
}

// Why a file nothing uses is left over, read from its own records.
void note_leftover_state(const FileStoreLog& log, std::vector<std::string>& why) {
  const auto& cleanup = log.cleanup();
  if (log.size() == 0) {
    why.push_back("it is empty: a run was stopped between creating the file and writing its first record");
  } else if (!cleanup.present) {
    why.push_back("no cleanup/ record: no instance ran its destructor, so the run that wrote it was killed");
  } else if (cleanup.value) {
    why.push_back(fmt::format(
        "cleanup/ = {}: {} ran its destructor, and the file was not deleted, so the other instances were killed",
        *cleanup.value,
        plural(static_cast<std::size_t>(std::max<std::int64_t>(*cleanup.value, 0)), "instance", "instances")));
  }
  if (log.refcount().value && *log.refcount().value > 0) {
    why.push_back(
        fmt::format("refcount/ = {}: torch >= 2.x instances that never ran their destructor", *log.refcount().value));
  }
  if (!log.user_keys().empty()) {
    why.push_back(
        "a next run on this path would read this state as live: the store-based barrier counts past world_size and "
        "waits out its timeout (30 min by default), gloo dials dead peers, and a stale cleanup/ lets the first "
        "finisher delete the file under its peers");
  }
}

}  // namespace

FileStoreDiagnosis diagnose(const FileStoreLog& log, const FileStoreEvidence& ev) {
  FileStoreDiagnosis d;
  auto& why = d.reasons;
  if (!log.is_filestore()) {
    d.verdict = FileStoreVerdict::NotFileStore;
    why.push_back("not a c10d FileStore log: " + log.foreign_reason());
    d.advice = "check the path: clean only removes files torch's FileStore wrote";
    return d;
  }
  const bool torn = log.torn_tail().has_value();
  const auto found = find_users(torn, ev, why);
  note_circumstances(log, ev, why);
  if (auto verdict = verdict_in_use(found, ev, d.advice)) {
    d.verdict = *verdict;
    d.orphans = dead_run_users(found, ev, why);
    if (!d.orphans.empty()) {
      d.advice = fmt::format(
          "every process using it belongs to a dead run: `ddp-launch clean --force` on this path ends them ({}) "
          "and removes it",
          pids(d.orphans));
    }
    return d;
  }

  why.insert(why.begin(), "no process has it open, holds a lock on it, or names it in its command line or environment");
  note_leftover_state(log, why);
  if (torn) {
    d.verdict = FileStoreVerdict::Torn;
    why.push_back("every torch reader of a torn file spins at 100% CPU forever holding LOCK_SH");
    d.advice = "remove it (truncating at the torn offset would also repair it, but the old state stays stale)";
  } else {
    d.verdict = FileStoreVerdict::Stale;
    d.advice = "remove it before the next run on this path";
  }
  return d;
}

}  // namespace ddp::store
