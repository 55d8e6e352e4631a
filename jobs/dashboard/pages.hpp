#pragma once
// The dashboard's HTTP replies as values, pure: the login page, the app's page, the embedded files
// (Content-Type, ETag, revalidation), redirects, and the headers every dashboard reply carries
// (a Content-Security-Policy that allows nothing but this origin).
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jobs/dashboard/assets.hpp"

namespace ddp::jobs::dashboard {

struct WebReply {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string header(std::string_view name) const;  // "" when absent
};

bool iequals(std::string_view a, std::string_view b);  // ASCII, ignoring case: header names, schemes

// Scripts, styles, images, connections, forms: this origin only; no inline script or style, no
// framing, no plugins, no <base>.
inline constexpr std::string_view kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "font-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

// The headers every reply on the TCP address carries, the API's too (its JSON holds job files,
// environments and logs): this policy, no type sniffing, no framing, no Referer.
using HeaderList = std::vector<std::pair<std::string_view, std::string_view>>;
const HeaderList& security_headers();

std::string content_type_for(std::string_view name);  // by extension; application/octet-stream else
// `{{key}}` → vars[key], escaped (common/markup.hpp); an unknown key stays as it is (a test sees it).
std::string render(std::string_view page, const std::map<std::string, std::string>& vars);

// An embedded file: 200, or 304 when If-None-Match names its ETag. Cache-Control no-cache: the
// browser keeps it and revalidates (a 304 on the loopback costs nothing), so an upgraded daemon's
// files are never served stale.
WebReply asset_reply(const Asset& asset, std::string_view if_none_match);
// The login page (never data): a form for the token; `error` says why the last try failed.
WebReply login_page(int status, std::string_view error, std::string_view next);
// The app's page for a logged-in browser: its CSRF token in a <meta> for the scripts.
WebReply app_page(std::string_view csrf);
WebReply redirect(std::string_view location, std::string_view set_cookie = {});
WebReply not_found(std::string_view what);

}  // namespace ddp::jobs::dashboard
