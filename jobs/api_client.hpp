#pragma once
// A small synchronous client of the daemon's HTTP API over its unix socket (Boost.Beast), for
// the CLI commands and the benchmark's load generator.
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ddp::jobs {

struct ApiReply {
  int status = 0;
  std::string body;
};

class ApiClient {
 public:
  // Connects now; throws ddp::Error naming the socket and how to start a daemon when none listens.
  explicit ApiClient(std::filesystem::path socket);
  ~ApiClient();
  // One request on the kept-alive connection.
  ApiReply request(std::string_view method, std::string_view target, std::string body = {},
                   const std::vector<std::pair<std::string, std::string>>& headers = {});
  // A streamed GET: on_data gets each piece of a 2xx body as it arrives. An error status comes
  // back with its whole body in the reply instead (body empty on success).
  ApiReply stream(std::string_view target, const std::function<void(std::string_view)>& on_data);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::filesystem::path socket_;
};

}  // namespace ddp::jobs
