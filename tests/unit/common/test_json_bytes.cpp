// common/json_bytes.hpp: argv, env and paths that are not UTF-8 survive a JSON record and come back
// byte for byte (issue 25, 3.7: strict dumping threw; error_handler_t::replace loses the bytes).
#include <doctest/doctest.h>

#include <stdexcept>

#include "common/events.hpp"
#include "common/json_bytes.hpp"

using ddp::bytes_from_json;
using ddp::bytes_to_json;
using json = nlohmann::json;

TEST_CASE("UTF-8 stays a plain string; other bytes round-trip through {\"base64\": …}") {
  CHECK(bytes_to_json("caf\xc3\xa9") == json("caf\xc3\xa9"));
  CHECK(ddp::is_utf8("caf\xc3\xa9"));
  for (std::string bytes : {std::string("\xff"), std::string("caf\xe9"), std::string("a\0\xfe", 3), std::string("\xc3"),
                            std::string("/tmp/st\xff\xfe/x")}) {
    CAPTURE(bytes);
    CHECK_FALSE(ddp::is_utf8(bytes));
    const json j = bytes_to_json(bytes);
    REQUIRE(j.is_object());
    const std::string text = j.dump();  // strict: throws on a string that is no UTF-8
    CHECK(bytes_from_json(json::parse(text)) == bytes);
  }
  const std::vector<std::string> argv{"python", "train.py", "--data=\xff"};
  const json list = bytes_to_json(argv);
  REQUIRE(list.is_array());
  CHECK(list[0] == "python");
  CHECK(bytes_from_json(json::parse(list.dump())[2]) == "--data=\xff");
  CHECK(bytes_from_json(json("plain")) == "plain");
  CHECK(bytes_from_json(json{{"base64", ""}}).empty());
  CHECK_THROWS_AS(bytes_from_json(json{{"base64", "not*base64"}}), std::invalid_argument);
  CHECK_THROWS_AS(bytes_from_json(json(5)), std::invalid_argument);
  CHECK_THROWS_AS(bytes_from_json(json{{"base64", "AA=="}, {"x", 1}}), std::invalid_argument);
}

TEST_CASE("an event's path that is not UTF-8 round-trips through its JSON line") {
  namespace ev = ddp::events;
  ev::Event e;
  e.payload = ev::FilestoreCleaned{"/tmp/st\xff"};
  const auto line = ev::to_line(e);
  const auto back = ev::parse_line(line);
  REQUIRE(std::holds_alternative<ev::FilestoreCleaned>(back.payload));
  CHECK(std::get<ev::FilestoreCleaned>(back.payload).path == "/tmp/st\xff");
}
