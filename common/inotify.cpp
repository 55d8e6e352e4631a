#include "common/inotify.hpp"

#include <fmt/format.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "common/error.hpp"

namespace ddp {

Inotify::Inotify(boost::asio::io_context& io) : stream_(io) {
  fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd_ < 0) throw Error(fmt::format("inotify_init1: {}", std::strerror(errno)));
  stream_.assign(fd_);
  arm();
}

Inotify::~Inotify() {
  *alive_ = false;
  boost::system::error_code ec;
  stream_.close(ec);
}

std::optional<int> Inotify::watch(const std::filesystem::path& path, Callback cb) {
  return add(path, IN_MODIFY | IN_CLOSE_WRITE, [cb = std::move(cb)](const std::string&) { cb(); });
}

std::optional<int> Inotify::watch_directory(const std::filesystem::path& dir, std::uint32_t mask, EntryCallback cb) {
  return add(dir, mask | IN_ONLYDIR, std::move(cb));
}

std::optional<int> Inotify::add(const std::filesystem::path& path, std::uint32_t mask, EntryCallback cb) {
  int wd = ::inotify_add_watch(fd_, path.c_str(), mask | IN_MASK_ADD);
  if (wd < 0) return std::nullopt;
  int token = next_token_++;
  callbacks_[wd][token] = std::move(cb);
  wd_of_[token] = wd;
  return token;
}

void Inotify::unwatch(int token) {
  auto it = wd_of_.find(token);
  if (it == wd_of_.end()) return;
  int wd = it->second;
  wd_of_.erase(it);
  auto& m = callbacks_[wd];
  m.erase(token);
  if (m.empty()) {
    callbacks_.erase(wd);
    ::inotify_rm_watch(fd_, wd);
  }
}

void Inotify::arm() {
  stream_.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                     [this, alive = alive_](boost::system::error_code ec) {
                       if (ec || !*alive) return;
                       alignas(inotify_event) char buf[16384];
                       for (;;) {
                         auto n = ::read(fd_, buf, sizeof buf);
                         if (n <= 0) break;
                         dispatch(buf, n);
                         if (!*alive) return;
                       }
                       arm();
                     });
}

// One call per (watch, entry) of the batch. Callbacks may watch and unwatch: collect them first,
// and skip tokens that an earlier callback removed.
void Inotify::dispatch(const char* buf, long n) {
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
    auto it = callbacks_.find(wd);
    if (it == callbacks_.end()) continue;
    for (auto& [token, cb] : it->second) calls.emplace_back(token, cb, name);
  }
  std::weak_ptr<bool> alive = alive_;
  for (auto& [token, cb, name] : calls) {
    if (wd_of_.count(token)) cb(name);
    auto still = alive.lock();
    if (!still || !*still) return;
  }
}

}  // namespace ddp
