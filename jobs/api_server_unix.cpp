// ApiServer's unix socket (api_server.hpp), in the builds whose Asio has local sockets (CMake picks
// this file or api_server_no_unix.cpp).
#include <boost/asio/local/stream_protocol.hpp>

#include "jobs/api_server.hpp"
#include "jobs/api_session.hpp"
#include "jobs/dashboard/live_stream_impl.hpp"
#include "jobs/unix_socket.hpp"
#include "platform/local_socket.hpp"

namespace ddp::jobs {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using session::Session;

}  // namespace ddp::jobs

// The dashboard's live stream on the unix socket (its TCP instantiation: live_stream.cpp).
template void ddp::jobs::dashboard::start_live_stream(boost::asio::local::stream_protocol::socket, JobManager&,
                                                      MetricsCache&, const LiveView&, TcpSlot, StillAllowed);

namespace ddp::jobs {

struct ApiServer::UnixAcceptor {
  explicit UnixAcceptor(asio::io_context& io) : acceptor(io) {}
  asio::local::stream_protocol::acceptor acceptor;
};

bool ApiServer::has_unix_socket() { return true; }

void ApiServer::listen_unix(const fs::path& path) {
  using proto = asio::local::stream_protocol;
  if (path.string().size() > platform::local_socket_path_max()) {
    throw UsageError(
        fmt::format("socket path {} is {} bytes, over the {}-byte limit of unix sockets; choose a "
                    "shorter --socket",
                    path.string(), path.string().size(), platform::local_socket_path_max()));
  }
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  remove_stale_socket(path);
  boost::system::error_code bec;
  {
    platform::PrivateCreation private_socket;  // the socket is born 0600: no window in which others may connect
    unix_ = std::make_shared<UnixAcceptor>(io_);
    unix_->acceptor.open();
    unix_->acceptor.bind(proto::endpoint(path.string()), bec);
  }
  if (bec) throw Error(fmt::format("cannot listen on {}: {}", path.string(), bec.message()));
  fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace, ec);
  unix_->acceptor.listen();
  unix_path_ = path;
  accept_unix();
}

void ApiServer::accept_unix() {
  unix_->acceptor.async_accept([this](boost::system::error_code ec, asio::local::stream_protocol::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (ec) return accept_later(&ApiServer::accept_unix);
    std::make_shared<Session<asio::local::stream_protocol::socket>>(std::move(s), jobs_, http_requests_, shared_)
        ->start();
    accept_unix();
  });
}

void ApiServer::close_unix() {
  boost::system::error_code ec;
  if (unix_) unix_->acceptor.close(ec);
  if (!unix_path_.empty()) {
    std::error_code rec;
    fs::remove(unix_path_, rec);
  }
}

}  // namespace ddp::jobs
