#pragma once

// tide-rm's page, served at GET / : one self-contained HTML document (inline CSS and
// JavaScript, nothing fetched from elsewhere) that reads the client API every two seconds and
// shows the cluster's totals, its applications and its nodes. The page itself holds no data,
// so it is served to anyone; what it reads needs a client token, given once in its address
// (http://RM:8088/?token=$(tide token)) as the AM's page takes its control token.

#include <string_view>

namespace tide::rm {

std::string_view resourceManagerPageHtml();

}  // namespace tide::rm
