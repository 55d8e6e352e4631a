// platform/file_watch.hpp on Windows: a bounded polling fallback. Every kPollInterval each watched
// file's size and write time are compared with the last look, and each watched directory's entries
// (at most kMaxPolledEntries of them): a change fires the callback, as inotify's event would.
#include "platform/file_watch.hpp"

#include <boost/asio/steady_timer.hpp>
#include <map>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

namespace ddp::platform {

namespace fs = std::filesystem;

namespace {

struct Look {
  std::uintmax_t size = 0;
  fs::file_time_type written{};
  bool operator==(const Look&) const = default;
};

std::optional<Look> look_at(const fs::path& path) {
  std::error_code ec;
  Look l;
  l.size = fs::file_size(path, ec);
  if (ec) l.size = 0;
  l.written = fs::last_write_time(path, ec);
  if (ec) return std::nullopt;
  return l;
}

std::map<std::string, Look> look_into(const fs::path& dir) {
  std::map<std::string, Look> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end && out.size() < FileWatch::kMaxPolledEntries;
       it.increment(ec)) {
    if (auto l = look_at(it->path())) out[it->path().filename().string()] = *l;
  }
  return out;
}

}  // namespace

struct FileWatch::Impl : std::enable_shared_from_this<FileWatch::Impl> {
  explicit Impl(boost::asio::io_context& io) : timer(io) {}
  struct Watched {
    fs::path path;
    bool directory = false;
    EntryCallback cb;
    std::optional<Look> file;
    std::map<std::string, Look> entries;
  };
  boost::asio::steady_timer timer;
  std::map<int, Watched> watched;  // token → what
  int next_token = 1;
  bool alive = true;
  bool armed = false;

  void arm() {
    if (armed || watched.empty()) return;
    armed = true;
    timer.expires_after(kPollInterval);
    timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      self->armed = false;
      if (ec || !self->alive) return;
      self->poll();
      if (self->alive) self->arm();
    });
  }

  void poll() {
    std::vector<std::tuple<int, EntryCallback, std::string>> calls;
    for (auto& [token, w] : watched) {
      if (!w.directory) {
        auto now = look_at(w.path);
        if (now && now != w.file) calls.emplace_back(token, w.cb, std::string());
        w.file = now;
        continue;
      }
      auto now = look_into(w.path);
      for (const auto& [name, l] : now) {
        auto before = w.entries.find(name);
        if (before == w.entries.end() || !(before->second == l)) calls.emplace_back(token, w.cb, name);
      }
      w.entries = std::move(now);
    }
    auto self = shared_from_this();  // a callback may destroy the FileWatch
    for (auto& [token, cb, name] : calls) {
      if (watched.count(token)) cb(name);
      if (!alive) return;
    }
  }

  std::optional<int> add(const fs::path& path, bool directory, EntryCallback cb) {
    std::error_code ec;
    if (directory ? !fs::is_directory(path, ec) : !fs::exists(path, ec)) return std::nullopt;
    Watched w{path, directory, std::move(cb), std::nullopt, {}};
    if (directory) {
      w.entries = look_into(path);
    } else {
      w.file = look_at(path);
    }
    int token = next_token++;
    watched.emplace(token, std::move(w));
    arm();
    return token;
  }
};

FileWatch::FileWatch(boost::asio::io_context& io) : impl_(std::make_shared<Impl>(io)) {}

FileWatch::~FileWatch() {
  impl_->alive = false;
  impl_->timer.cancel();
}

std::optional<int> FileWatch::watch(const fs::path& path, Callback cb) {
  return impl_->add(path, false, [cb = std::move(cb)](const std::string&) { cb(); });
}

std::optional<int> FileWatch::watch_directory(const fs::path& dir, EntryCallback cb) {
  return impl_->add(dir, true, std::move(cb));
}

void FileWatch::unwatch(int token) { impl_->watched.erase(token); }

}  // namespace ddp::platform
