#pragma once

// What tide's web pages (the AM's status page, tide-rm's page) share: one self-contained HTML
// document each (inline CSS and JavaScript, nothing fetched from elsewhere: a cluster may have
// no internet access), with the same look and the same way of taking a token.

#include <string>
#include <string_view>

namespace tide::rest {

// The page: `<!doctype html>` ... `<title>`title`</title>`, the shared style then `css`, `body`
// (the HTML inside <body>), then a script that is the shared functions followed by `script`.
// The shared style: the palette (--bg, --card, --text, --muted, --border), the dark header
// (h1, .meta, #conn and #conn.down for the connection note), sections, tables (td.num, td.why)
// and .empty. The shared script, in strict mode:
// - tokenFromAddress(storageKey): the token given once as ?token=... in the page's address
//   (as the tide commands print it), kept in the tab's sessionStorage under storageKey and
//   taken out of the address bar (and so out of the history); "" when there is none;
// - bearerHeaders(token, extra): `extra` plus "Authorization: Bearer token" when there is one;
// - el(tag, attrs, children): an element with attributes ("class", "text" or any other) and
//   children.
std::string webPage(std::string_view title, std::string_view css, std::string_view body,
                    std::string_view script);

}  // namespace tide::rest
