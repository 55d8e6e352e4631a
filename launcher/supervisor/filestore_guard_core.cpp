#include <fmt/format.h>

#include <algorithm>

#include "common/env_contract.hpp"
#include "launcher/supervisor/filestore_guard.hpp"
#include "store/filestore.hpp"

namespace ddp::launcher {
namespace {

// The path of each file://... inside `text` (up to whitespace, a quote, or a URL's ?/# suffix), as
// torch reads it on this OS (store/filestore.hpp's path_from_file_url).
std::vector<std::string> file_urls_in(std::string_view text, store::PathStyle style) {
  std::vector<std::string> out;
  constexpr std::string_view scheme = "file://";
  for (auto at = text.find(scheme); at != std::string_view::npos; at = text.find(scheme, at + 1)) {
    auto url = text.substr(at);
    url = url.substr(0, url.find_first_of(" \t\n'\",;"));
    if (url.find('{') != std::string_view::npos) continue;  // a placeholder: expanded per rank
    auto path = store::path_from_file_url(url, style);
    if (!path || *path == "/" || *path == "\\") continue;  // no path, or the root
    out.push_back(std::move(*path));
  }
  return out;
}

}  // namespace

std::vector<NamedFileStore> filestores_named_by(const std::vector<std::string>& argv, const EnvMap& environment,
                                                bool run_sets_filestore_var, store::PathStyle style) {
  std::vector<NamedFileStore> out;
  auto add = [&](std::string path, std::string where) {
    auto same = [&](const NamedFileStore& n) { return n.path == path; };
    if (std::none_of(out.begin(), out.end(), same)) out.push_back({std::move(path), std::move(where)});
  };
  for (std::size_t i = 0; i < argv.size(); ++i) {
    for (auto& p : file_urls_in(argv[i], style)) add(std::move(p), fmt::format("argument '{}'", argv[i]));
  }
  for (const auto& [name, value] : environment) {
    for (auto& p : file_urls_in(value, style)) add(std::move(p), fmt::format("${}", name));
  }
  if (!run_sets_filestore_var) {
    if (auto it = environment.find(std::string(env::kFileStorePath));
        it != environment.end() && !it->second.empty() && it->second.find('{') == std::string::npos) {
      add(it->second, fmt::format("${}", env::kFileStorePath));
    }
  }
  return out;
}

}  // namespace ddp::launcher
