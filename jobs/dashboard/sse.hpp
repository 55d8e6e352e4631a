#pragma once
// Server-Sent Events framing (HTML Living Standard, "Server-sent events"), pure: what the
// dashboard's live stream writes. A message is `event:` and one `data:` line per line of its data,
// ended by a blank line; a line starting with ':' is a comment (a heartbeat the browser ignores).
#include <chrono>
#include <string>
#include <string_view>

namespace ddp::jobs::dashboard {

// "event: NAME\ndata: …\n\n". Every line of `data` (ended by \n, \r\n or \r, as the browser splits
// them) becomes its own data: line, so the browser's event.data is `data` with \n between lines.
// `event` must not hold a line break (the stream's own names only).
std::string sse_message(std::string_view event, std::string_view data);
// ": TEXT\n\n": keeps the connection in use and finds dead peers; no event in the browser.
std::string sse_comment(std::string_view text);
// "retry: MS\n\n": how long the browser's EventSource waits before reconnecting.
std::string sse_retry(std::chrono::milliseconds delay);

}  // namespace ddp::jobs::dashboard
