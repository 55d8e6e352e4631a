#pragma once
// JSON strings are UTF-8 text; argv items, environment values and paths are bytes, which need not
// be (a Latin-1 file name, a stray 0xff in an argument). nlohmann's dump throws on such a string,
// and its error_handler_t::replace writes U+FFFD in place of each bad byte, losing it. Every record
// of ours that holds argv, env or paths (run.json, processes.json) writes them with bytes_to_json
// and reads them with bytes_from_json, which round-trip any bytes:
//   - a string that is valid UTF-8 is written as itself (what every reader expects, nearly always);
//   - one that is not is written as the object {"base64": "<its bytes, RFC 4648 base64>"}.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace ddp {

// Whether `text` is valid UTF-8 (as nlohmann's strict dump checks it).
bool is_utf8(std::string_view text);

// `bytes` as a JSON string, or {"base64": …} when they are not UTF-8.
nlohmann::json bytes_to_json(std::string_view bytes);
// A JSON array of bytes_to_json's values.
nlohmann::json bytes_to_json(const std::vector<std::string>& items);

// The bytes bytes_to_json wrote (a string, or {"base64": …}). Throws std::invalid_argument on
// anything else (no string, no object with a valid "base64").
std::string bytes_from_json(const nlohmann::json& value);

}  // namespace ddp
