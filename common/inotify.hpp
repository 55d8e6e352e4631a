#pragma once
// The file watch under its old name, for launcher/hang/heartbeat_watch_linux.cpp (which passes inotify's
// IN_* mask). The concept and its POSIX and Windows halves live in platform/file_watch.hpp.
#include "platform/file_watch.hpp"

namespace ddp {

using Inotify = platform::FileWatch;

}  // namespace ddp
