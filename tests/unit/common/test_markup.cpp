#include <doctest/doctest.h>

#include "common/markup.hpp"

TEST_CASE("markup escaping: text stays text in elements and quoted attributes") {
  CHECK(ddp::escape_markup("a<b>&\"c\"'d'") == "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;");
  CHECK(ddp::escape_markup("plain loss_1.5") == "plain loss_1.5");
  CHECK(ddp::escape_markup("") == "");
}
