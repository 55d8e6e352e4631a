#pragma once
// Text put into HTML or XML (an SVG chart's labels, the dashboard's pages): & < > " ' escaped, so a
// job name or a metric name is always text, never markup, in an element or a quoted attribute.
#include <string>
#include <string_view>

namespace ddp {

std::string escape_markup(std::string_view text);

}  // namespace ddp
