#include "worker/gloo_store.hpp"

#include <string_view>

namespace ddp::worker {

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  client_.set(key, std::string_view(data.data(), data.size()));
}

std::vector<char> GlooStore::get(const std::string& key) {
  auto value = client_.get(key);
  return {value.begin(), value.end()};
}

void GlooStore::wait(const std::vector<std::string>& keys) { client_.wait(keys); }

void GlooStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  client_.wait(keys, timeout);
}

}  // namespace ddp::worker
