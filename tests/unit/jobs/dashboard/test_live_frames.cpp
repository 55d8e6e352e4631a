#include <doctest/doctest.h>

#include "jobs/api_request.hpp"
#include "jobs/dashboard/live_frames.hpp"

using namespace ddp::jobs;
using namespace ddp::jobs::dashboard;
using json = nlohmann::json;

TEST_CASE("the chart's points: x is the value's position, every rank and metric") {
  json m = {{"ranks", {{"0", {{"loss", {2.0, 1.5, 1.0}}, {"acc", {0.1}}}}, {"1", {{"loss", {2.1}}}}}}};
  auto f = metrics_frame(m, 100);
  CHECK(f["names"] == json({"acc", "loss"}));
  CHECK(f["ranks"]["0"]["loss"]["x"] == json({1, 2, 3}));
  CHECK(f["ranks"]["0"]["loss"]["y"] == json({2.0, 1.5, 1.0}));
  CHECK(f["ranks"]["0"]["loss"]["count"] == 3);
  CHECK(f["ranks"]["1"]["loss"]["y"] == json({2.1}));
  CHECK(metrics_frame(json::object(), 10)["names"].empty());
}

TEST_CASE("the chart's x is the value's step when every series has increasing steps, as report draws it") {
  json m = {{"ranks", {{"0", {{"loss", {2.0, 1.5, 1.0}}, {"step", {0, 10, 20}}}}, {"1", {{"loss", {2.1, 1.6}}}}}},
            {"steps", {{"0", {{"loss", {0, 10, 20}}, {"step", {0, 10, 20}}}}, {"1", {{"loss", {0, 10}}}}}}};
  auto f = metrics_frame(m, 100);
  CHECK(f["x"] == "step");
  CHECK(f["names"] == json({"loss"}));  // the step is the x axis, not a metric to pick
  CHECK(f["ranks"]["0"]["loss"]["x"] == json({0, 10, 20}));
  CHECK(f["ranks"]["0"]["loss"]["y"] == json({2.0, 1.5, 1.0}));
  CHECK(f["ranks"]["1"]["loss"]["x"] == json({0, 10}));
  // Thinned: the kept values keep their own steps.
  auto thin = metrics_frame(m, 2);
  CHECK(thin["ranks"]["0"]["loss"]["x"] == json({0, 20}));
  CHECK(thin["ranks"]["0"]["loss"]["y"] == json({2.0, 1.0}));

  // A step that goes back (per-epoch batch indices), one missing or of the wrong length: every
  // series by position, and the frame says so.
  for (const json& bad : {json{0, 10, 5}, json{0, nullptr, 20}, json{0, 10}, json{0, 10, 10}}) {
    json b = m;
    b["steps"]["0"]["loss"] = bad;
    auto g = metrics_frame(b, 100);
    CHECK(g["x"] == "index");
    CHECK(g["ranks"]["0"]["loss"]["x"] == json({1, 2, 3}));
    CHECK(g["ranks"]["1"]["loss"]["x"] == json({1, 2}));
  }
  CHECK(metrics_frame({{"ranks", {{"0", {{"loss", {1.0}}}}}}}, 100)["x"] == "index");  // no steps at all
  CHECK(metrics_frame({{"ranks", {{"0", {{"step", {1.0}}}}}}, {"steps", {{"0", {{"step", {1.0}}}}}}}, 100)["names"] ==
        json({"step"}));  // a step alone is still shown
}

TEST_CASE("a long series is thinned evenly, its first and last values kept") {
  json values = json::array();
  for (int i = 0; i < 10001; ++i) values.push_back(i);
  auto f = metrics_frame({{"ranks", {{"0", {{"loss", values}}}}}}, 101);
  const auto& s = f["ranks"]["0"]["loss"];
  CHECK(s["x"].size() == 101);
  CHECK(s["count"] == 10001);
  CHECK(s["x"][0] == 1);
  CHECK(s["y"][0] == 0);
  CHECK(s["x"][100] == 10001);
  CHECK(s["y"][100] == 10000);
  CHECK(s["y"][50] == 5000);
}

TEST_CASE("a log chunk is cut before an incomplete UTF-8 character") {
  CHECK(utf8_complete_prefix("abc") == 3);
  CHECK(utf8_complete_prefix("") == 0);
  CHECK(utf8_complete_prefix("a\xc3\xa9") == 3);  // é complete
  CHECK(utf8_complete_prefix("a\xc3") == 1);      // é's first byte only
  CHECK(utf8_complete_prefix("a\xe2\x82") == 1);  // € missing its last byte
  CHECK(utf8_complete_prefix("a\xe2\x82\xac") == 4);
  CHECK(utf8_complete_prefix("a\xf0\x9f\x98") == 1);     // an emoji missing a byte
  CHECK(utf8_complete_prefix("\x80\x80\x80\x80") == 4);  // not UTF-8: nothing held back forever
}

TEST_CASE("a live view from the query, with errors that name the parameter") {
  auto v = parse_live_view({});
  CHECK(v.kind == LiveView::Kind::Jobs);
  CHECK_FALSE(v.state);
  CHECK(*parse_live_view({{"view", "jobs"}, {"state", "running"}}).state == JobState::Running);
  v = parse_live_view({{"view", "job"}, {"job", "7"}, {"rank", "supervisor"}, {"stream", "stderr"}});
  CHECK(v.kind == LiveView::Kind::Job);
  CHECK(v.job == 7);
  CHECK(v.rank == "supervisor");
  CHECK(parse_live_view({{"view", "host"}}).kind == LiveView::Kind::Host);
  CHECK_THROWS_AS(parse_live_view({{"view", "job"}}), ApiError);
  CHECK_THROWS_AS(parse_live_view({{"view", "job"}, {"job", "1"}, {"rank", "x"}}), ApiError);
  CHECK_THROWS_AS(parse_live_view({{"view", "job"}, {"job", "1"}, {"stream", "both"}}), ApiError);
  CHECK_THROWS_AS(parse_live_view({{"view", "jobs"}, {"state", "DONE"}}), ApiError);
  try {
    parse_live_view({{"view", "nope"}});
  } catch (const ApiError& e) {
    CHECK(e.status == 400);
    CHECK(e.message.find("view 'nope'") != std::string::npos);
  }
}

TEST_CASE("a rank's output as a terminal shows it: no colour codes, control bytes or lone CRs") {
  using namespace std::string_literals;
  auto shown = [](std::string_view b) {
    auto t = terminal_text(b);
    CHECK(t.consumed == b.size());
    return t.text;
  };
  CHECK(shown("\x1b[1;32mok\x1b[0m done\n") == "ok done\n");
  CHECK(shown("a\x1b[2K\x1b[1Gb") == "ab");  // erase line, cursor to column 1
  CHECK(shown("\x1b]0;title\x07x\x1b]8;;http://e\x1b\\link\x1b]8;;\x1b\\") == "xlink");      // title, hyperlink
  CHECK(shown("\x1b(Bx\x1b=y") == "xy");                                                     // charset, keypad mode
  CHECK(shown(" 10%|#  |\r 50%|## |\r100%|###|\n") == " 10%|#  |\n 50%|## |\n100%|###|\n");  // tqdm
  CHECK(shown("a\r\nb\r\n") == "a\nb\n");
  CHECK(shown("nul\0here\x7f\x08\tend"s) == "nulhere\tend");
  CHECK(shown("<script>x</script> \xff\xfe") == "<script>x</script> \xff\xfe");  // text stays text
  CHECK(shown("\x1b[12;\x80x") == "\x80x");  // a malformed sequence ends at its stray byte
}

TEST_CASE("an unfinished control sequence or CR waits for the next chunk") {
  auto t = terminal_text("ok\x1b[1;3");
  CHECK(t.text == "ok");
  CHECK(t.consumed == 2);
  CHECK(terminal_text("ok\x1b[1;32mgreen").text == "okgreen");
  t = terminal_text("line\r");
  CHECK(t.text == "line");
  CHECK(t.consumed == 4);
  CHECK(terminal_text("ok\x1b").consumed == 2);
  CHECK(terminal_text("ok\x1b]0;tit").consumed == 2);
  // Not a sequence after all: an ESC followed by more than kMaxControlSequence bytes of no end.
  std::string endless = "a\x1b]" + std::string(kMaxControlSequence + 10, 'x');
  t = terminal_text(endless);
  CHECK(t.consumed == endless.size());
  CHECK(t.text == "a]" + std::string(kMaxControlSequence + 10, 'x'));
}
