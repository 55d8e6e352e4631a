#include "platform/pipe.hpp"

#include <fmt/format.h>
#include <windows.h>

#include <atomic>

#include "platform/windows/wide.hpp"

namespace ddp::platform {

void close_handle(NativeHandle h) {
  if (h != kNoHandle && h != INVALID_HANDLE_VALUE) CloseHandle(h);
}

std::optional<OutputPipe> make_output_pipe(std::string& error) {
  static std::atomic<unsigned> serial{0};
  const std::wstring name =
      win::to_wide(fmt::format("\\\\.\\pipe\\ddp-launch-{}-{}", GetCurrentProcessId(), serial.fetch_add(1)));
  HANDLE read =
      CreateNamedPipeW(name.c_str(), PIPE_ACCESS_INBOUND | FILE_FLAG_OVERLAPPED | FILE_FLAG_FIRST_PIPE_INSTANCE,
                       PIPE_TYPE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS, 1, 64 * 1024, 64 * 1024, 0, nullptr);
  if (read == INVALID_HANDLE_VALUE) {
    error = win::error_text();
    return std::nullopt;
  }
  HANDLE write = CreateFileW(name.c_str(), GENERIC_WRITE, 0, nullptr, OPEN_EXISTING, 0, nullptr);
  if (write == INVALID_HANDLE_VALUE) {
    error = win::error_text();
    CloseHandle(read);
    return std::nullopt;
  }
  return OutputPipe{read, write};
}

}  // namespace ddp::platform
