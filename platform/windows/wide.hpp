#pragma once
// UTF-8 (our strings) <-> UTF-16 (the Win32 W functions), and the text of a Win32 error: the
// Windows half's own helpers, included by platform/windows/*.cpp only.
#include <windows.h>

#include <string>
#include <string_view>

namespace ddp::platform::win {

std::wstring to_wide(std::string_view utf8);
std::string to_utf8(std::wstring_view wide);
// "The system cannot find the file specified (error 2)"; `code` defaults to GetLastError().
std::string error_text(DWORD code = GetLastError());

// A handle closed at scope exit (INVALID_HANDLE_VALUE and null are nothing).
class Handle {
 public:
  Handle() = default;
  explicit Handle(HANDLE h) : h_(h) {}
  Handle(Handle&& o) noexcept : h_(o.release()) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { reset(); }
  HANDLE get() const { return h_; }
  explicit operator bool() const { return h_ != nullptr && h_ != INVALID_HANDLE_VALUE; }
  HANDLE release() {
    HANDLE h = h_;
    h_ = nullptr;
    return h;
  }
  void reset(HANDLE h = nullptr) {
    if (*this) CloseHandle(h_);
    h_ = h;
  }

 private:
  HANDLE h_ = nullptr;
};

}  // namespace ddp::platform::win
