#pragma once

// Who may use the AM's status port (ui.port): the check runs before any route, keyed on the
// method and path only, so it holds whatever handler serves the path.
//
// - Every request that changes something (any method but GET, HEAD and OPTIONS) needs
//   `Authorization: Bearer <control token>` (the application's control token, see
//   rest/messages/credentials.h): 401 when it is missing or wrong, compared in constant time.
// - Such a request coming from a web page of another origin (an `Origin` header other than
//   this server's own, http://<Host>) is refused with 403, and one with a body must say
//   `Content-Type: application/json` (415 otherwise): a page elsewhere cannot post a form or
//   a text/plain "simple request" at the AM (CSRF).
// - With ui.auth=all, reads (GET /api/v1/..., /metrics) need the token too. The page itself
//   (GET /) never does: it takes the token from its URL (?token=) and sends it on its requests.

#include <string>

#include "am/config.h"
#include "rest/http_server.h"

namespace tide {
class Properties;
}

namespace tide::am {

// Reads ui.auth; throws ConfigError naming the key for anything but writes or all.
UiAuth uiAuthFromProperties(const Properties& properties);

// The hook for the status server's HttpServerOptions::auth. A refusal string is a 401; a
// cross-origin or non-JSON write throws RestError (403, 415). `scheme` is the page's own
// ("https" when the port serves TLS): its origin is <scheme>://<Host>.
rest::AuthHook controlAuth(std::string controlToken, UiAuth mode, std::string scheme = "http");

// Paths the hook never checks (pass as HttpServerOptions::authExemptPaths): the page.
std::set<std::string> controlAuthExemptPaths();

}  // namespace tide::am
