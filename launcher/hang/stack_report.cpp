#include "launcher/hang/stack_report.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <system_error>

namespace ddp::launcher {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Calls `on_line` for each line of `text` (without its end: "\n" or "\r\n").
template <class F>
void for_each_line(std::string_view text, F&& on_line) {
  while (!text.empty()) {
    auto end = text.find('\n');
    auto line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    on_line(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
}

std::optional<int> parse_line_number(std::string_view s) {
  if (s.empty() || s.size() > 9) return std::nullopt;
  int n = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

// Collects threads and their frames within the bounds.
class StackBuilder {
 public:
  void begin_thread(std::string id, bool current) {
    cur_ = nullptr;
    if (threads_.size() >= kMaxThreads) return;
    threads_.push_back(ThreadStack{std::move(id), current, {}});
    cur_ = &threads_.back();
  }
  bool in_thread() const { return cur_ != nullptr; }
  void end_thread() { cur_ = nullptr; }
  void add(StackFrame frame) {
    if (cur_ && cur_->frames.size() < kMaxFrames) cur_->frames.push_back(std::move(frame));
  }
  std::vector<ThreadStack> take() { return std::move(threads_); }

 private:
  std::vector<ThreadStack> threads_;
  ThreadStack* cur_ = nullptr;
};

// `  File "PATH", line N in FUNC`
std::optional<StackFrame> parse_python_frame(std::string_view line) {
  constexpr std::string_view kFile = "  File \"";
  if (!line.starts_with(kFile)) return std::nullopt;
  line.remove_prefix(kFile.size());
  auto at = line.rfind("\", line ");
  if (at == std::string_view::npos) return std::nullopt;
  StackFrame f;
  f.file = std::string(line.substr(0, at));
  auto rest = line.substr(at + 8);
  auto in = rest.find(" in ");
  if (in == std::string_view::npos) return std::nullopt;
  f.line = parse_line_number(rest.substr(0, in)).value_or(0);  // "???" when unknown
  f.function = std::string(trim(rest.substr(in + 4)));
  return f;
}

// `#3  0x... in FUNC (args) at FILE:LINE`, `#0  FUNC (args) at FILE:LINE`, `#1  0x... in ?? () from LIB`
std::optional<StackFrame> parse_gdb_frame(std::string_view line) {
  if (!line.starts_with('#')) return std::nullopt;
  line.remove_prefix(1);
  std::size_t digits = 0;
  while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) ++digits;
  if (digits == 0) return std::nullopt;
  auto rest = trim(line.substr(digits));
  if (rest.starts_with("0x")) {
    auto in = rest.find(" in ");
    if (in == std::string_view::npos) return std::nullopt;
    rest = rest.substr(in + 4);
  }
  StackFrame f;
  const auto args_end = rest.rfind(')');
  const auto after_args = args_end == std::string_view::npos ? 0 : args_end;
  if (auto from = rest.rfind(" from "); from != std::string_view::npos && from > after_args) {
    f.file = std::string(trim(rest.substr(from + 6)));
    rest = rest.substr(0, from);
  } else if (auto at = rest.rfind(" at "); at != std::string_view::npos && at > after_args) {
    auto location = trim(rest.substr(at + 4));
    auto colon = location.rfind(':');
    if (colon != std::string_view::npos) {
      if (auto n = parse_line_number(location.substr(colon + 1))) {
        f.file = std::string(location.substr(0, colon));
        f.line = *n;
        rest = rest.substr(0, at);
      }
    }
  }
  auto paren = rest.find(" (");
  f.function = std::string(trim(rest.substr(0, paren)));
  if (f.function.empty()) return std::nullopt;
  return f;
}

std::string demangle(std::string_view symbol) {
  std::string name(symbol);
  if (!name.starts_with("_Z")) return name;
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : name;
}

// `OBJECT(SYMBOL+0xOFF)[0xADDR]`, `OBJECT(+0xOFF)[0xADDR]`, `OBJECT[0xADDR]`
std::optional<StackFrame> parse_backtrace_symbol(std::string_view line) {
  auto bracket = line.rfind('[');
  if (bracket == std::string_view::npos || !line.ends_with(']')) return std::nullopt;
  auto head = line.substr(0, bracket);
  StackFrame f;
  auto open = head.find('(');
  f.file = std::string(head.substr(0, open));
  if (open != std::string_view::npos) {
    auto inner = head.substr(open + 1);
    if (!inner.empty() && inner.back() == ')') inner.remove_suffix(1);
    f.function = demangle(inner.substr(0, inner.rfind('+')));
  }
  if (f.file.empty() && f.function.empty()) return std::nullopt;
  return f;
}

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

std::string_view basename_of(std::string_view path) {
  auto slash = path.find_last_of("/\\");  // a Windows rank's paths: C:\\ddp\\train.py
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string_view stack_source_name(StackSource source) {
  switch (source) {
    case StackSource::Faulthandler: return "faulthandler";
    case StackSource::Gdb: return "gdb";
    case StackSource::SdkHandler: return "SDK handler";
  }
  return "?";
}

std::vector<ThreadStack> parse_faulthandler(std::string_view text) {
  StackBuilder b;
  for_each_line(text, [&](std::string_view line) {
    if (line.size() > kMaxLineBytes) return b.end_thread();
    auto t = trim(line);
    if (t.ends_with("(most recent call first):")) {
      const bool current = t.starts_with("Current thread ");
      const bool single = t.starts_with("Stack ");  // faulthandler.dump_traceback(all_threads=False)
      if (current || single || t.starts_with("Thread ")) {
        auto id = single ? std::string_view() : t.substr(current ? 15 : 7);
        return b.begin_thread(std::string(id.substr(0, id.find(' '))), current || single);
      }
    }
    if (!b.in_thread()) return;
    if (auto f = parse_python_frame(line)) return b.add(std::move(*f));
    if (t.empty() || !line.starts_with("  ")) b.end_thread();  // "  <no Python frame>", "  ..." stay in it
  });
  return b.take();
}

std::vector<ThreadStack> parse_gdb(std::string_view text) {
  StackBuilder b;
  for_each_line(text, [&](std::string_view line) {
    if (line.size() > kMaxLineBytes) return;
    auto t = trim(line);
    if (t.starts_with("Thread ") && t.ends_with("):")) {
      auto rest = t.substr(7);
      auto number = rest.substr(0, rest.find(' '));
      std::string id = "Thread " + std::string(number);
      if (auto lwp = rest.find("(LWP "); lwp != std::string_view::npos) {
        auto n = rest.substr(lwp + 5);
        id += fmt::format(" (LWP {})", n.substr(0, std::min(n.find(')'), std::size_t{12})));
      }
      return b.begin_thread(std::move(id), false);
    }
    if (!b.in_thread()) return;
    if (auto f = parse_gdb_frame(t)) return b.add(std::move(*f));
    if (t.empty()) b.end_thread();
  });
  return b.take();
}

std::vector<ThreadStack> parse_sdk_backtrace(std::string_view text) {
  StackBuilder b;
  for_each_line(text, [&](std::string_view line) {
    if (line.size() > kMaxLineBytes) return;
    auto t = trim(line);
    if (t.starts_with(kSdkBacktraceBegin)) {
      auto id = trim(t.substr(kSdkBacktraceBegin.size()));  // "(pid 12, thread 13):"
      while (!id.empty() && (id.front() == '(' || id.back() == ':' || id.back() == ')')) {
        id = id.front() == '(' ? id.substr(1) : id.substr(0, id.size() - 1);
      }
      return b.begin_thread(std::string(id), true);
    }
    if (t.starts_with(kSdkBacktraceEnd)) return b.end_thread();
    if (!b.in_thread()) return;
    if (auto f = parse_backtrace_symbol(t)) b.add(std::move(*f));
  });
  return b.take();
}

std::vector<ThreadStack> parse_stacks(StackSource source, std::string_view text) {
  switch (source) {
    case StackSource::Faulthandler: return parse_faulthandler(text);
    case StackSource::Gdb: return parse_gdb(text);
    case StackSource::SdkHandler: return parse_sdk_backtrace(text);
  }
  return {};
}

// A Windows Python's path as a POSIX one, lower case (C:\\Python311\\Lib\\threading.py →
// c:/python311/lib/threading.py); a path without a backslash as it is.
std::string posix_form(std::string_view file) {
  std::string out(file);
  if (file.find('\\') == std::string_view::npos) return out;
  for (char& c : out) c = c == '\\' ? '/' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Windows keeps the standard library in <prefix>\\Lib (C:\\Python311\\Lib\\threading.py).
bool in_windows_python_lib(std::string_view file) {
  auto lib = file.find("/lib/");
  return lib != std::string_view::npos && contains(file.substr(0, lib), "python");
}

bool is_user_frame(const StackFrame& frame, StackSource source) {
  const std::string_view file = frame.file;
  switch (source) {
    case StackSource::Faulthandler: {
      if (file.empty()) return false;
      if (file.starts_with('<')) return file == "<string>" || file == "<stdin>";
      const std::string f = posix_form(file);
      return !contains(f, "/site-packages/") && !contains(f, "/dist-packages/") && !contains(f, "/lib/python") &&
             !contains(f, "/torch/") && (f == file || !in_windows_python_lib(f));
    }
    case StackSource::Gdb:
      // glibc's own sources show as "./nptl/…" or "../sysdeps/…"; a build's relative paths
      // ("../src/train.cpp", as Ninja compiles them) are the program's.
      return frame.line > 0 && !file.empty() && !file.starts_with("/usr/") && !file.starts_with("./") &&
             !contains(file, "sysdeps/");
    case StackSource::SdkHandler: {
      std::string_view fn = frame.function;
      return !fn.empty() && !contains(basename_of(file), ".so") && !fn.starts_with("std::") &&
             !fn.starts_with("__") && !fn.starts_with("ddp::worker::");
    }
  }
  return false;
}

namespace {

const ThreadStack* main_thread(const RankStacks& s) {
  if (s.threads.empty()) return nullptr;
  for (const auto& t : s.threads) {
    if (s.source == StackSource::Faulthandler && !t.frames.empty() && t.frames.back().function == "<module>") return &t;
    if (s.source == StackSource::Gdb && (t.id == "Thread 1" || t.id.starts_with("Thread 1 "))) return &t;
  }
  for (const auto& t : s.threads) {
    if (t.current) return &t;
  }
  return &s.threads.front();
}

std::string native_collective(const std::vector<StackFrame>& frames) {
  static constexpr std::array<std::string_view, 9> kNames{"all_reduce", "allreduce",  "reduce_scatter",
                                                          "all_gather", "allgather",  "all_to_all",
                                                          "alltoall",   "broadcast", "barrier"};
  for (const auto& f : frames) {
    std::string lower = f.function;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    for (auto name : kNames) {
      if (contains(lower, name)) return std::string(name);
    }
  }
  return "";
}

}  // namespace

RankPosition locate(const RankStacks& stacks) {
  RankPosition pos;
  const ThreadStack* t = main_thread(stacks);
  if (!t || t->frames.empty()) return pos;
  pos.innermost = t->frames.front();
  for (const auto& f : t->frames) {
    if (is_user_frame(f, stacks.source)) {
      pos.user_frame = f;
      break;
    }
  }
  if (stacks.source == StackSource::Faulthandler) {
    for (const auto& f : t->frames) {
      if (contains(posix_form(f.file), "torch/distributed/")) {
        pos.collective = f.function;
        break;
      }
    }
  } else {
    pos.collective = native_collective(t->frames);
  }
  return pos;
}

std::optional<std::string> read_source_line(const std::string& file, int line) {
  std::error_code ec;
  if (line <= 0 || file.empty() || !std::filesystem::is_regular_file(file, ec)) return std::nullopt;
  if (std::filesystem::file_size(file, ec) > (64u << 20) || ec) return std::nullopt;
  std::ifstream in(file);
  std::string text;
  for (int i = 0; i < line; ++i) {
    if (!std::getline(in, text)) return std::nullopt;
  }
  auto t = trim(text);
  return std::string(t.substr(0, 512));
}

namespace {

std::string who(const std::vector<int>& ranks) {
  std::string list;
  for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
  return (ranks.size() == 1 ? "rank " : "ranks ") + list;
}

std::string describe_frame(const StackFrame& f) {
  auto base = basename_of(f.file);
  if (f.line > 0) return fmt::format("{}:{} {}", base, f.line, f.function);
  if (base.empty()) return f.function;
  return fmt::format("{} ({})", f.function, base);
}

struct Group {
  std::vector<int> ranks;
  RankPosition pos;
  StackSource source;
};

std::string describe_group(const Group& g, const SourceLineReader& read_line) {
  const bool one = g.ranks.size() == 1;
  if (!g.pos.collective.empty()) {
    auto at = g.pos.user_frame ? fmt::format(" ({}:{})", basename_of(g.pos.user_frame->file), g.pos.user_frame->line)
                               : std::string();
    if (g.pos.user_frame && g.pos.user_frame->line == 0) at = fmt::format(" ({})", describe_frame(*g.pos.user_frame));
    return fmt::format("{} {} in {}{}", who(g.ranks), one ? "waits" : "wait", g.pos.collective, at);
  }
  const auto& frame = g.pos.user_frame ? *g.pos.user_frame : *g.pos.innermost;
  auto text = fmt::format("{} {} in {}", who(g.ranks), one ? "is" : "are", describe_frame(frame));
  if (g.pos.user_frame && frame.line > 0 && read_line) {
    if (auto src = read_line(frame.file, frame.line); src && !src->empty()) text += ": " + *src;
  }
  return text;
}

std::string group_key(const RankPosition& pos) {
  const auto& f = pos.user_frame ? *pos.user_frame : *pos.innermost;
  return fmt::format("{}\n{}\n{}\n{}", pos.collective, f.file, f.line, f.function);
}

}  // namespace

std::string summarize_stacks(const std::vector<RankStacks>& ranks, const SourceLineReader& read_line) {
  std::vector<Group> groups;
  std::map<std::string, std::size_t> by_key;
  std::vector<std::string> missing;
  for (const auto& r : ranks) {
    auto pos = locate(r);
    if (!r.missing.empty() || !pos.innermost) {
      missing.push_back(fmt::format("rank {} gave no stack ({})", r.rank,
                                    r.missing.empty() ? "no frames in what it printed" : r.missing));
      continue;
    }
    auto key = group_key(pos);
    auto [it, fresh] = by_key.emplace(key, groups.size());
    if (fresh) groups.push_back(Group{{}, pos, r.source});
    groups[it->second].ranks.push_back(r.rank);
  }
  for (auto& g : groups) std::sort(g.ranks.begin(), g.ranks.end());
  // The collective's waiters first, then the odd ones out, each by their lowest rank.
  std::stable_sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    if (a.pos.collective.empty() != b.pos.collective.empty()) return !a.pos.collective.empty();
    return a.ranks.front() < b.ranks.front();
  });
  std::string out;
  for (const auto& g : groups) out += (out.empty() ? "" : "; ") + describe_group(g, read_line);
  for (const auto& m : missing) out += (out.empty() ? "" : "; ") + m;
  return out;
}

std::string stacks_file_text(const std::vector<RankStacks>& ranks, std::string_view summary) {
  std::string out = fmt::format("hang forensics: {}\n", summary);
  for (const auto& r : ranks) {
    out += fmt::format("\n=== rank {} (local {}), pid {}: {} ===\n", r.rank, r.local_rank, r.pid,
                       r.missing.empty() ? std::string(stack_source_name(r.source)) : "no stack: " + r.missing);
    out += r.raw;
    if (!r.raw.empty() && r.raw.back() != '\n') out += '\n';
  }
  return out;
}

}  // namespace ddp::launcher
