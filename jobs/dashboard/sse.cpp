#include "jobs/dashboard/sse.hpp"

#include <fmt/format.h>

namespace ddp::jobs::dashboard {

std::string sse_message(std::string_view event, std::string_view data) {
  std::string out;
  out.reserve(data.size() + event.size() + 16);
  out += "event: ";
  out += event;
  out += '\n';
  std::size_t start = 0;
  for (;;) {
    auto end = data.find_first_of("\r\n", start);
    out += "data: ";
    out += data.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    out += '\n';
    if (end == std::string_view::npos) break;
    start = end + 1;
    if (data[end] == '\r' && start < data.size() && data[start] == '\n') ++start;  // \r\n is one break
  }
  out += '\n';
  return out;
}

std::string sse_comment(std::string_view text) { return fmt::format(": {}\n\n", text); }

std::string sse_retry(std::chrono::milliseconds delay) { return fmt::format("retry: {}\n\n", delay.count()); }

}  // namespace ddp::jobs::dashboard
