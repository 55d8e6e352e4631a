#include "launcher/hang/flight_recorder.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstring>
#include <memory>
#include <system_error>

#include "store/server.hpp"

namespace asio = boost::asio;

namespace ddp::launcher {

std::string flight_recorder_dump_value(int rank) {
  std::string value(sizeof(int), '\0');
  std::memcpy(value.data(), &rank, sizeof(int));
  return value;
}

void trigger_flight_recorder_dump(store::StoreServer& server, int blamed_rank) {
  server.set_local(std::string(kFlightRecorderDumpKey), flight_recorder_dump_value(blamed_rank));
}

namespace {

struct DumpWait : std::enable_shared_from_this<DumpWait> {
  DumpWait(asio::io_context& io, std::chrono::milliseconds timeout) : timer(io), until(Clock::now() + timeout) {}
  using Clock = std::chrono::steady_clock;
  asio::steady_timer timer;
  Clock::time_point until;
  std::string prefix;
  std::vector<int> ranks;
  std::function<void(std::vector<std::filesystem::path>)> done;

  void check() {
    std::vector<std::filesystem::path> found;
    for (int r : ranks) {
      std::filesystem::path p = prefix + std::to_string(r);
      std::error_code ec;
      if (std::filesystem::file_size(p, ec) > 0 && !ec) found.push_back(p);
    }
    if (found.size() == ranks.size() || Clock::now() >= until) {
      done(std::move(found));
      return;
    }
    timer.expires_after(std::chrono::milliseconds(100));
    timer.async_wait([self = shared_from_this()](boost::system::error_code ec) {
      if (!ec) self->check();
    });
  }
};

}  // namespace

void wait_for_flight_recorder_dumps(asio::io_context& io, std::string prefix, std::vector<int> ranks,
                                    std::chrono::milliseconds timeout,
                                    std::function<void(std::vector<std::filesystem::path>)> done) {
  auto w = std::make_shared<DumpWait>(io, timeout);
  w->prefix = std::move(prefix);
  w->ranks = std::move(ranks);
  w->done = std::move(done);
  asio::post(io, [w] { w->check(); });
}

}  // namespace ddp::launcher
