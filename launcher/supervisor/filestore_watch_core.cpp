// The FileStore watch's pure part: which paths the workers may name, and the verdict on a file
// the ranks used (launcher/supervisor/filestore_watch.hpp).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>

#include "launcher/supervisor/filestore_watch.hpp"

namespace fs = std::filesystem;

namespace ddp::launcher {
namespace {

bool is_absolute_path(std::string_view text, store::PathStyle style) {
  if (text.empty()) return false;
  if (text.front() == '/') return true;
  if (style == store::PathStyle::Windows) {
    return (text.size() >= 3 && std::isalpha(static_cast<unsigned char>(text[0])) && text[1] == ':' &&
            (text[2] == '\\' || text[2] == '/')) ||
           text.starts_with("\\\\");
  }
  return false;
}

}  // namespace

std::vector<NamedFileStore> filestore_candidates(const std::vector<std::string>& argv, const EnvMap& env,
                                                 const fs::path& cwd, store::PathStyle style) {
  std::vector<NamedFileStore> out;
  std::string where;
  auto push = [&](std::string s) {
    auto same = [&](const NamedFileStore& n) { return n.path == s; };
    if (std::none_of(out.begin(), out.end(), same)) out.push_back({std::move(s), where});
  };
  auto add = [&](std::string_view text, bool relative_ok) {
    if (text.empty() || text.find('{') != std::string_view::npos || text.find('\0') != std::string_view::npos) return;
    if (auto url = store::path_from_file_url(text, style)) {
      text = *url;
      if (text.empty()) return;
      auto p = is_absolute_path(text, style) ? fs::path(std::string(text)) : cwd / std::string(text);
      push(p.lexically_normal().string());
      return;
    }
    if (text.starts_with('-') && !is_absolute_path(text, style)) return;  // a flag, not a path
    if (!is_absolute_path(text, style) && !relative_ok) return;
    auto p = is_absolute_path(text, style) ? fs::path(std::string(text)) : cwd / std::string(text);
    auto s = p.lexically_normal().string();
    if (s == "/" || s == cwd.lexically_normal().string()) return;
    push(std::move(s));
  };
  for (std::size_t i = 1; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    where = fmt::format("argument '{}'", a);
    if (a.starts_with('-')) {
      if (auto eq = a.find('='); eq != std::string_view::npos) add(a.substr(eq + 1), true);
      continue;
    }
    add(a, true);
  }
  for (const auto& [name, value] : env) {
    // Only a value that is one path or URL: PATH-like lists and the rest are no FileStore's name.
    where = fmt::format("${}", name);
    const char list_separator = style == store::PathStyle::Windows ? ';' : ':';
    if (value.starts_with("file://")) {
      add(value, false);
    } else if (is_absolute_path(value, style) && value.find(list_separator) == std::string::npos) {
      add(value, false);
    }
  }
  return out;
}

std::string_view to_string(FoundFileStoreVerdict v) {
  switch (v) {
    case FoundFileStoreVerdict::Stale: return "stale";
    case FoundFileStoreVerdict::InUse: return "in_use";
    case FoundFileStoreVerdict::Unsure: return "unsure";
    case FoundFileStoreVerdict::Ours: return "ours";
  }
  return "unsure";
}

FoundFileStore judge_found_filestore(const FoundFileStoreFacts& f) {
  FoundFileStore out{f.path, FoundFileStoreVerdict::Unsure, f.age_s, f.gone_now, ""};
  const std::string gone =
      f.gone_now ? " It is gone now: the ranks' torch removed it as they exited (the last one out deletes a FileStore)."
                 : "";
  const std::string clean = fmt::format("`ddp-launch clean {}`", f.path);
  const std::string age = f.age_s ? fmt::format("last written {} before this run started", describe_age(*f.age_s))
                                  : std::string("its age unknown");
  const std::string head = fmt::format("FileStore {} ({}; {})", f.path, f.how_found, age);
  auto reasons = [&] { return f.diagnosis ? fmt::format("{}", fmt::join(f.diagnosis->reasons, "; ")) : f.problem; };

  if (f.created_by_this_run) {
    out.verdict = FoundFileStoreVerdict::Ours;
    out.text = fmt::format("FileStore {} ({}) was created by this run", f.path, f.how_found);
    return out;
  }
  if (!f.diagnosis) {
    out.text = fmt::format("{}: could not be judged: {}. Check it with {}", head, f.problem, clean);
    return out;
  }
  using store::FileStoreVerdict;
  switch (f.diagnosis->verdict) {
    case FileStoreVerdict::InUse:
    case FileStoreVerdict::StuckReader:
      out.verdict = FoundFileStoreVerdict::InUse;
      out.text = fmt::format(
          "{} is in use by a process outside this run{}: {}. ddp-launch did not remove it; stop that process (or "
          "give the job another path), then {}",
          head, f.gone_now ? " (when this run started)" : "", reasons(), clean);
      return out;
    case FileStoreVerdict::NotFileStore:
      out.text = fmt::format("{} is not a c10d FileStore after all ({}): left alone", head, reasons());
      return out;
    case FileStoreVerdict::Stale:
    case FileStoreVerdict::Torn: break;
  }
  if (f.several_nodes) {
    out.text = fmt::format(
        "{} looks left by an earlier run ({}), but with several nodes its users on the other nodes cannot be seen "
        "from here, so it is not proven stale and was not removed. If no node of this job runs, remove it: {}",
        head, reasons(), clean);
    return out;
  }
  if (!f.existed_before_run) {
    out.text = fmt::format(
        "{} looks unused ({}), but nothing shows it was there before this run started, so it is not proven "
        "an earlier run's and was not removed. If no other job uses it, remove it: {}",
        head, reasons(), clean);
    return out;
  }
  out.verdict = FoundFileStoreVerdict::Stale;
  out.text = fmt::format(
      "{} is stale: it was there before this run started, and {}. The ranks met on an earlier run's keys in it "
      "(a killed run leaves them).{} {} before the next run: {}",
      head, reasons(), gone, f.gone_now ? "If it is back, remove it" : "Remove it", clean);
  return out;
}

}  // namespace ddp::launcher
