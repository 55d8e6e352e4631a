#pragma once
// What every reply of the TCP server carries unless it says otherwise: the dashboard's security
// headers, and no caching (the API's JSON holds job files, environments and logs; the live stream
// is a stream: none of it belongs on the disk cache of a browser that read it with a session).
#include <boost/beast/http/field.hpp>

#include "jobs/dashboard/pages.hpp"

namespace ddp::jobs::dashboard {

template <class Response>
void harden(Response& res) {
  for (auto [k, v] : security_headers()) {
    boost::beast::string_view name(k.data(), k.size());
    if (res.find(name) == res.end()) res.set(name, boost::beast::string_view(v.data(), v.size()));
  }
  if (res.find(boost::beast::http::field::cache_control) == res.end()) {
    res.set(boost::beast::http::field::cache_control, "no-store");
  }
}

}  // namespace ddp::jobs::dashboard
