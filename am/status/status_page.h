#pragma once

// The status page served at GET / : one self-contained HTML document (inline CSS and
// JavaScript, no external resources) that polls the JSON API every second and draws the
// executor count over time, the executor table and the decision log.

#include <string_view>

namespace tide::am {

std::string_view statusPageHtml();

}  // namespace tide::am
