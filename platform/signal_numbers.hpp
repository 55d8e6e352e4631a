#pragma once
// The signal numbers of the supervisor's vocabulary, in Linux's numbering: what the event stream
// and the summaries name (common/signals.hpp), what a stop request carries. The POSIX build checks
// them against <csignal> (posix/stop_signals.cpp). Windows has none of these signals: its console
// events are given these numbers (platform/stop_signals.hpp), and a stop request's number picks the
// Windows way of stopping (platform/child_process.hpp).
namespace ddp::sig {

inline constexpr int kHup = 1;
inline constexpr int kInt = 2;
inline constexpr int kQuit = 3;
inline constexpr int kAbrt = 6;
inline constexpr int kKill = 9;
inline constexpr int kUsr1 = 10;
inline constexpr int kSegv = 11;
inline constexpr int kUsr2 = 12;
inline constexpr int kPipe = 13;
inline constexpr int kTerm = 15;
inline constexpr int kChld = 17;
inline constexpr int kStop = 19;
inline constexpr int kLimit = 65;  // Linux's NSIG: 1 .. 64 are signal numbers

}  // namespace ddp::sig
