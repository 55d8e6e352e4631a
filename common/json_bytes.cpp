#include "common/json_bytes.hpp"

#include <boost/beast/core/detail/base64.hpp>
#include <stdexcept>

namespace ddp {

namespace base64 = boost::beast::detail::base64;

bool is_utf8(std::string_view text) {
  try {
    (void)nlohmann::json(text).dump();
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

nlohmann::json bytes_to_json(std::string_view bytes) {
  if (is_utf8(bytes)) return nlohmann::json(bytes);
  std::string encoded(base64::encoded_size(bytes.size()), '\0');
  encoded.resize(base64::encode(encoded.data(), bytes.data(), bytes.size()));
  return nlohmann::json{{"base64", encoded}};
}

nlohmann::json bytes_to_json(const std::vector<std::string>& items) {
  auto out = nlohmann::json::array();
  for (const auto& item : items) out.push_back(bytes_to_json(item));
  return out;
}

std::string bytes_from_json(const nlohmann::json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.size() == 1 && value.contains("base64") && value["base64"].is_string()) {
    const auto& encoded = value["base64"].get_ref<const std::string&>();
    std::string bytes(base64::decoded_size(encoded.size()), '\0');
    auto [written, read] = base64::decode(bytes.data(), encoded.data(), encoded.size());
    // Beast's decoder stops at the padding: what follows it may be '=' and nothing else.
    if (encoded.size() % 4 != 0 || encoded.find_first_not_of('=', read) != std::string::npos ||
        encoded.size() - read > 2) {
      throw std::invalid_argument("not valid base64: " + encoded);
    }
    bytes.resize(written);
    return bytes;
  }
  throw std::invalid_argument("expected a string or {\"base64\": …}, not " +
                              value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace ddp
