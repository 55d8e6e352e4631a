#include "jobs/dashboard/pages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "common/markup.hpp"

namespace ddp::jobs::dashboard {

namespace {

// What every dashboard reply carries.
WebReply with_security_headers(WebReply r) {
  for (auto [k, v] : security_headers()) r.headers.emplace_back(k, v);
  return r;
}

WebReply html(int status, std::string body) {
  WebReply r;
  r.status = status;
  r.headers.emplace_back("Content-Type", "text/html; charset=utf-8");
  r.headers.emplace_back("Cache-Control", "no-store");  // pages carry a session's CSRF token
  r.body = std::move(body);
  return with_security_headers(std::move(r));
}

std::string_view page(std::string_view name) {
  const auto* a = find_asset(name);
  return a ? a->body : std::string_view("<!doctype html><title>ddp-launch</title><p>page missing from this build");
}

}  // namespace

const HeaderList& security_headers() {
  static const HeaderList headers{
      {"Content-Security-Policy", kContentSecurityPolicy},
      {"X-Content-Type-Options", "nosniff"},
      {"X-Frame-Options", "DENY"},
      {"Referrer-Policy", "no-referrer"},  // a token URL never leaks to another page
      {"Cross-Origin-Opener-Policy", "same-origin"},
  };
  return headers;
}

const Asset* find_asset(std::string_view name) {
  for (const auto& a : assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string WebReply::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (iequals(k, name)) return v;
  }
  return "";
}

std::string content_type_for(std::string_view name) {
  if (name.ends_with(".js")) return "text/javascript; charset=utf-8";
  if (name.ends_with(".css")) return "text/css; charset=utf-8";
  if (name.ends_with(".html")) return "text/html; charset=utf-8";
  if (name.ends_with(".svg")) return "image/svg+xml";
  if (name.ends_with(".png")) return "image/png";
  if (name.ends_with(".json")) return "application/json";
  if (name.ends_with(".txt")) return "text/plain; charset=utf-8";
  if (name.ends_with(".md")) return "text/markdown; charset=utf-8";
  return "application/octet-stream";
}

std::string render(std::string_view page_text, const std::map<std::string, std::string>& vars) {
  std::string out;
  std::size_t at = 0;
  for (;;) {
    auto open = page_text.find("{{", at);
    auto close = open == std::string_view::npos ? open : page_text.find("}}", open + 2);
    if (close == std::string_view::npos) break;
    auto it = vars.find(std::string(page_text.substr(open + 2, close - open - 2)));
    out += page_text.substr(at, open - at);
    out += it == vars.end() ? std::string(page_text.substr(open, close + 2 - open)) : escape_markup(it->second);
    at = close + 2;
  }
  out += page_text.substr(at);
  return out;
}

WebReply asset_reply(const Asset& asset, std::string_view if_none_match) {
  WebReply r;
  auto etag = fmt::format("\"{}\"", asset.sha256.substr(0, 32));
  r.headers.emplace_back("ETag", etag);
  r.headers.emplace_back("Cache-Control", "no-cache");
  // If-None-Match is a list ("a", "b") or *; a weak form (W/"a") matches too (RFC 9110 §13.1.2).
  if (!if_none_match.empty() && (if_none_match == "*" || if_none_match.find(etag) != std::string_view::npos)) {
    r.status = 304;
    return with_security_headers(std::move(r));
  }
  r.headers.emplace_back("Content-Type", content_type_for(asset.name));
  r.body = std::string(asset.body);
  return with_security_headers(std::move(r));
}

WebReply login_page(int status, std::string_view error, std::string_view next) {
  return html(status, render(page("login.html"), {{"error", std::string(error)},
                                                  {"error_hidden", error.empty() ? "hidden" : ""},
                                                  {"next", std::string(next)}}));
}

WebReply app_page(std::string_view csrf) {
  return html(200, render(page("index.html"), {{"csrf", std::string(csrf)}}));
}

WebReply redirect(std::string_view location, std::string_view set_cookie) {
  WebReply r;
  r.status = 303;
  r.headers.emplace_back("Location", std::string(location));
  if (!set_cookie.empty()) r.headers.emplace_back("Set-Cookie", std::string(set_cookie));
  r.headers.emplace_back("Cache-Control", "no-store");
  return with_security_headers(std::move(r));
}

WebReply not_found(std::string_view what) {
  WebReply r;
  r.status = 404;
  r.headers.emplace_back("Content-Type", "text/plain; charset=utf-8");
  r.body = fmt::format("not found: {}\n", what);
  return with_security_headers(std::move(r));
}

}  // namespace ddp::jobs::dashboard
