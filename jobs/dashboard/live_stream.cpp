#include "jobs/dashboard/live_stream.hpp"

#include <boost/asio/ip/tcp.hpp>

#include "jobs/dashboard/live_stream_impl.hpp"

namespace ddp::jobs::dashboard {

using live_detail::dump;
using live_detail::kChartPoints;

const std::string& MetricsCache::frame(JobId id, TimePoint now) {
  std::erase_if(entries_,
                [&](const auto& kv) { return kv.first != id && now - kv.second.at > std::chrono::seconds(10); });
  auto it = entries_.find(id);
  if (it == entries_.end() || now - it->second.at >= std::chrono::seconds(1)) {
    auto text = dump(metrics_frame(jobs_.views().job_metrics(id), kChartPoints));
    it = entries_.insert_or_assign(id, Entry{now, std::move(text)}).first;
  }
  return it->second.text;
}

// The unix socket's instantiation is in api_server_unix.cpp (a build without local sockets has none).
template void start_live_stream(boost::asio::ip::tcp::socket, JobManager&, MetricsCache&, const LiveView&, TcpSlot,
                                StillAllowed);

}  // namespace ddp::jobs::dashboard
