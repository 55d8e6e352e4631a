#pragma once
// GlooStore: gloo's rendezvous::Store interface over our StoreClient, so gloo contexts meet
// through `ddp-launch store` (or any c10d TCPStore server) instead of Redis or a shared file.
#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

#include "store/client.hpp"

namespace ddp::worker {

class GlooStore : public gloo::rendezvous::Store {
 public:
  // `client` must outlive this store; its call timeout bounds get() and the timeout-less wait().
  explicit GlooStore(store::StoreClient& client) : client_(client) {}

  void set(const std::string& key, const std::vector<char>& data) override;
  // Blocks until the key exists (up to the client's timeout), like gloo's own stores.
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  store::StoreClient& client_;
};

}  // namespace ddp::worker
