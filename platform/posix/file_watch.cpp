// platform/file_watch.hpp on Linux: one inotify descriptor on the loop.
#include "platform/file_watch.hpp"

#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cerrno>
#include <map>
#include <system_error>
#include <tuple>
#include <utility>
#include <vector>

namespace ddp::platform {

struct FileWatch::Impl : std::enable_shared_from_this<FileWatch::Impl> {
  explicit Impl(boost::asio::io_context& io) : stream(io) {}
  int fd = -1;
  boost::asio::posix::stream_descriptor stream;
  std::map<int, std::map<int, EntryCallback>> callbacks;  // wd → token → callback
  std::map<int, int> wd_of;                               // token → wd
  int next_token = 1;
  bool alive = true;

  std::optional<int> add(const std::filesystem::path& path, std::uint32_t mask, EntryCallback cb) {
    int wd = ::inotify_add_watch(fd, path.c_str(), mask | IN_MASK_ADD);
    if (wd < 0) return std::nullopt;
    int token = next_token++;
    callbacks[wd][token] = std::move(cb);
    wd_of[token] = wd;
    return token;
  }

  void arm() {
    stream.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                      [self = shared_from_this()](boost::system::error_code ec) {
                        if (ec || !self->alive) return;
                        alignas(inotify_event) char buf[16384];
                        for (;;) {
                          auto n = ::read(self->fd, buf, sizeof buf);
                          if (n <= 0) break;
                          self->dispatch(buf, n);
                          if (!self->alive) return;
                        }
                        self->arm();
                      });
  }

  // One call per (watch, entry) of the batch. Callbacks may watch and unwatch: collect them first,
  // and skip tokens that an earlier callback removed.
  void dispatch(const char* buf, long n) {
    std::vector<std::pair<int, std::string>> fired;
    for (const char* p = buf; p < buf + n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(p);
      fired.emplace_back(e->wd, e->len > 0 ? std::string(e->name) : std::string());
      p += sizeof(inotify_event) + e->len;
    }
    std::sort(fired.begin(), fired.end());
    fired.erase(std::unique(fired.begin(), fired.end()), fired.end());
    std::vector<std::tuple<int, EntryCallback, std::string>> calls;
    for (const auto& [wd, name] : fired) {
      auto it = callbacks.find(wd);
      if (it == callbacks.end()) continue;
      for (auto& [token, cb] : it->second) calls.emplace_back(token, cb, name);
    }
    auto self = shared_from_this();  // a callback may destroy the FileWatch
    for (auto& [token, cb, name] : calls) {
      if (wd_of.count(token)) cb(name);
      if (!alive) return;
    }
  }
};

FileWatch::FileWatch(boost::asio::io_context& io) : impl_(std::make_shared<Impl>(io)) {
  impl_->fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (impl_->fd < 0) throw std::system_error(errno, std::generic_category(), "inotify_init1");
  impl_->stream.assign(impl_->fd);
  impl_->arm();
}

FileWatch::~FileWatch() {
  impl_->alive = false;
  boost::system::error_code ec;
  impl_->stream.close(ec);
}

std::optional<int> FileWatch::watch(const std::filesystem::path& path, Callback cb) {
  return impl_->add(path, IN_MODIFY | IN_CLOSE_WRITE, [cb = std::move(cb)](const std::string&) { cb(); });
}

// IN_CREATE: the first open of a new file; IN_MODIFY: a write to a file kept open; IN_CLOSE_WRITE:
// open(…, "w").close(); IN_ATTRIB: a touch.
std::optional<int> FileWatch::watch_directory(const std::filesystem::path& dir, EntryCallback cb) {
  return impl_->add(dir, IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_ONLYDIR, std::move(cb));
}

void FileWatch::unwatch(int token) {
  auto& m = *impl_;
  auto it = m.wd_of.find(token);
  if (it == m.wd_of.end()) return;
  int wd = it->second;
  m.wd_of.erase(it);
  auto& cbs = m.callbacks[wd];
  cbs.erase(token);
  if (cbs.empty()) {
    m.callbacks.erase(wd);
    ::inotify_rm_watch(m.fd, wd);
  }
}

}  // namespace ddp::platform
