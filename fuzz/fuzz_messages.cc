// Every wire message codec (rest/messages/*.h): the first byte picks the decoder, the rest is
// the JSON text. A decoder either returns a message or throws a JSON error naming the field;
// nothing else escapes (no crash, no other exception, no sanitizer finding).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "rest/json.h"
#include "rest/messages/cluster.h"
#include "rest/messages/executor.h"
#include "rest/messages/node.h"

namespace {

using Decoder = std::function<void(const rapidjson::Value&)>;

const std::vector<Decoder>& decoders() {
  using namespace tide::rest;
  static const std::vector<Decoder> all{
      [](const rapidjson::Value& v) { (void)newApplicationResponseFromJson(v); },
      [](const rapidjson::Value& v) { (void)applicationSubmissionFromJson(v); },
      [](const rapidjson::Value& v) { (void)applicationReportFromJson(v); },
      [](const rapidjson::Value& v) { (void)applicationReportsFromJson(v); },
      [](const rapidjson::Value& v) { (void)appStateFromJson(v); },
      [](const rapidjson::Value& v) { (void)clusterMetricsFromJson(v); },
      [](const rapidjson::Value& v) { (void)nodeReportsFromJson(v); },
      [](const rapidjson::Value& v) { (void)clusterInfoFromJson(v); },
      [](const rapidjson::Value& v) { (void)allocateRequestFromJson(v); },
      [](const rapidjson::Value& v) { (void)allocateResponseFromJson(v); },
      [](const rapidjson::Value& v) { (void)finishApplicationMasterRequestFromJson(v); },
      [](const rapidjson::Value& v) { (void)executorRegistrationFromJson(v); },
      [](const rapidjson::Value& v) { (void)executorRegisteredFromJson(v); },
      [](const rapidjson::Value& v) { (void)executorSyncFromJson(v); },
      [](const rapidjson::Value& v) { (void)executorSyncReplyFromJson(v); },
      [](const rapidjson::Value& v) { (void)nodeRegistrationFromJson(v); },
      [](const rapidjson::Value& v) { (void)nodeRegistrationResponseFromJson(v); },
      [](const rapidjson::Value& v) { (void)nodeHeartbeatFromJson(v); },
      [](const rapidjson::Value& v) { (void)nodeHeartbeatResponseFromJson(v); },
      [](const rapidjson::Value& v) { (void)containerLaunchRequestFromJson(v); },
      [](const rapidjson::Value& v) { (void)containerReportFromJson(v); },
  };
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto& all = decoders();
  const Decoder& decode = all[data[0] % all.size()];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    const rapidjson::Document document = tide::rest::parseJson(text);
    decode(document);
  } catch (const tide::rest::JsonParseError&) {
  } catch (const tide::rest::JsonFieldError&) {
  }
  return 0;
}
