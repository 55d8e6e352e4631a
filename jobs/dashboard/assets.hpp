#pragma once
// The dashboard's files, compiled into the binary: jobs/dashboard/web/* and the npm packages' files
// it serves (uPlot), embedded at build time by embed_assets.cmake (the generated
// dashboard_assets.cpp in the build directory). Nothing is read from disk or fetched at run time.
#include <span>
#include <string_view>

namespace ddp::jobs::dashboard {

struct Asset {
  std::string_view name;  // "app.js", "uPlot.min.css": served as /assets/<name> (pages: *.html, rendered)
  std::string_view body;
  std::string_view sha256;  // of the body, hex: the ETag
};

std::span<const Asset> assets();  // generated
const Asset* find_asset(std::string_view name);

}  // namespace ddp::jobs::dashboard
