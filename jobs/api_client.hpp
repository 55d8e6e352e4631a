#pragma once
// A small synchronous client of the daemon's HTTP API (Boost.Beast), for the CLI commands and the
// benchmark's load generator: over its unix socket (no token: the socket is 0600), or over TCP
// with the token as a bearer header (the Windows build's only way: it has no unix socket).
#include <cstdint>
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

// Where a daemon's API is: its unix socket, or (socket empty) TCP host:port and the token.
struct ApiAddress {
  std::filesystem::path socket;
  std::string host;
  std::uint16_t port = 0;
  std::string token;
  std::string describe() const;  // the socket's path, or "host:port"
};

// One open connection to the daemon (api_client_io.hpp's, for each kind of socket).
class ApiConnection {
 public:
  virtual ~ApiConnection() = default;
  using Headers = std::vector<std::pair<std::string, std::string>>;
  virtual ApiReply request(std::string_view method, std::string_view target, std::string body, const Headers& headers,
                           const std::string& where) = 0;
  virtual ApiReply stream(std::string_view target, const Headers& headers,
                          const std::function<void(std::string_view)>& on_data, const std::string& where) = 0;
};

class ApiClient {
 public:
  // Connects now; throws ddp::Error naming the socket (or address) and how to start a daemon when
  // none listens.
  explicit ApiClient(std::filesystem::path socket);
  explicit ApiClient(ApiAddress address);
  ~ApiClient();
  // One request on the kept-alive connection.
  ApiReply request(std::string_view method, std::string_view target, std::string body = {},
                   const std::vector<std::pair<std::string, std::string>>& headers = {});
  // A streamed GET: on_data gets each piece of a 2xx body as it arrives. An error status comes
  // back with its whole body in the reply instead (body empty on success).
  ApiReply stream(std::string_view target, const std::function<void(std::string_view)>& on_data);

 private:
  ApiConnection::Headers with_token(const ApiConnection::Headers& headers) const;
  ApiAddress address_;
  std::unique_ptr<ApiConnection> connection_;
};

// A connection to the unix socket at `path` (api_client_unix.cpp); nullptr with `why` set when
// none can be made (no daemon there, or a build without unix sockets: api_client_no_unix.cpp).
std::unique_ptr<ApiConnection> connect_unix(const std::filesystem::path& path, std::string& why);

}  // namespace ddp::jobs
