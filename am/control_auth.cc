#include "am/control_auth.h"

#include "common/config.h"
#include "common/strings.h"
#include "rest/messages/credentials.h"
#include "rest/messages/node.h"

namespace tide::am {
namespace {

bool changesSomething(const std::string& method) {
  return method != "GET" && method != "HEAD" && method != "OPTIONS";
}

// "application/json; charset=utf-8" -> "application/json".
std::string mediaType(const std::string& contentType) {
  return toLower(trim(std::string_view(contentType).substr(0, contentType.find(';'))));
}

}  // namespace

UiAuth uiAuthFromProperties(const Properties& properties) {
  const std::string mode = toLower(properties.getString("ui.auth"));
  if (mode == "writes") return UiAuth::kWrites;
  if (mode == "all") return UiAuth::kAll;
  throw ConfigError(properties.describe("ui.auth") + ": expected writes or all");
}

rest::AuthHook controlAuth(std::string controlToken, UiAuth mode, std::string scheme) {
  return [controlToken = std::move(controlToken), mode,
          scheme = std::move(scheme)](const httplib::Request& req) -> std::optional<std::string> {
    const bool write = changesSomething(req.method);
    if (!write && mode == UiAuth::kWrites) return std::nullopt;
    const std::string token = rest::bearerTokenOf(req.get_header_value("Authorization"));
    if (token.empty()) {
      return std::string(
          "missing 'Authorization: Bearer <control token>': this request needs the "
          "application's control token (the ?token= of the page URL that tide run, tide "
          "submit and tide status print)");
    }
    if (!rest::secretsEqual(token, controlToken)) {
      return std::string("invalid control token for this application");
    }
    if (!write) return std::nullopt;
    if (req.has_header("Origin")) {
      const std::string origin = req.get_header_value("Origin");
      const std::string own = scheme + "://" + req.get_header_value("Host");
      if (!equalsIgnoreCase(origin, own)) {
        throw rest::RestError(403, "cross-origin request refused: Origin " + origin +
                                       " is not this server's (" + own + ")");
      }
    }
    const bool hasBody = req.method == "POST" || req.method == "PUT" || req.method == "PATCH";
    if (hasBody && mediaType(req.get_header_value("Content-Type")) != "application/json") {
      throw rest::RestError(415, "Content-Type must be application/json, got '" +
                                     req.get_header_value("Content-Type") + "'");
    }
    return std::nullopt;
  };
}

std::set<std::string> controlAuthExemptPaths() {
  return {"/"};
}

}  // namespace tide::am
