#pragma once
// A TCP connection's place in the count of live TCP connections (--max-tcp-connections, ApiLimits):
// held by whatever owns the connection (an API session, then the live stream it hands over to),
// given back when that owner is gone.
#include <cstddef>
#include <memory>
#include <utility>

namespace ddp::jobs {

class TcpSlot {
 public:
  TcpSlot() = default;
  explicit TcpSlot(std::shared_ptr<std::size_t> open) : open_(std::move(open)) {
    if (open_) ++*open_;
  }
  TcpSlot(TcpSlot&& other) noexcept : open_(std::move(other.open_)) {}
  TcpSlot& operator=(TcpSlot&& other) noexcept {
    if (this != &other) {
      release();
      open_ = std::move(other.open_);
    }
    return *this;
  }
  TcpSlot(const TcpSlot&) = delete;
  TcpSlot& operator=(const TcpSlot&) = delete;
  ~TcpSlot() { release(); }

 private:
  void release() {
    if (open_) --*open_;
    open_.reset();
  }
  std::shared_ptr<std::size_t> open_;
};

}  // namespace ddp::jobs
