#include "deploy/rm/request_limits.h"

#include <algorithm>
#include <sstream>

#include "common/strings.h"
#include "rest/http_server.h"

namespace tide::rm {
namespace {

void checkSize(const std::string& field, size_t size, size_t limit) {
  if (size > limit) {
    throw rest::RestError(413, field + " is " + std::to_string(size) + " bytes; the limit is " +
                                   std::to_string(limit));
  }
}

size_t nonNegative(const httplib::Request& req, const std::string& name, size_t maximum) {
  const std::string text = req.get_param_value(name.c_str());
  const bool digits =
      !text.empty() && text.size() <= 9 &&
      std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  const size_t value = digits ? static_cast<size_t>(std::stoul(text)) : maximum + 1;
  if (value > maximum) {
    throw rest::RestError(400, "query parameter " + name + "='" + text.substr(0, 64) +
                                   "' is not an integer between 0 and " + std::to_string(maximum));
  }
  return value;
}

}  // namespace

void checkSubmissionLimits(const rest::ApplicationSubmission& submission,
                           const SubmissionLimits& limits) {
  checkSize("application-name", submission.applicationName.size(), limits.nameBytes);
  checkSize("queue", submission.queue.size(), limits.nameBytes);
  checkSize("am-container-spec.commands.command", submission.command.size(), limits.commandBytes);
  if (submission.environment.size() > limits.environmentEntries) {
    throw rest::RestError(
        413, "am-container-spec.environment has " + std::to_string(submission.environment.size()) +
                 " entries; the limit is " + std::to_string(limits.environmentEntries));
  }
  size_t total = 0;
  for (const auto& [key, value] : submission.environment) {
    const std::string shown = key.substr(0, 64);
    checkSize("am-container-spec.environment key '" + shown + "'", key.size(),
              limits.environmentKeyBytes);
    checkSize("am-container-spec.environment value of " + shown, value.size(),
              limits.environmentValueBytes);
    total += key.size() + value.size();
  }
  checkSize("am-container-spec.environment", total, limits.environmentBytes);
}

Page pageOf(const httplib::Request& req) {
  Page page;
  if (req.has_param("offset")) page.offset = nonNegative(req, "offset", 1'000'000'000);
  if (req.has_param("limit")) {
    page.limit = nonNegative(req, "limit", Page::kMaxPageLimit);
    if (page.limit == 0) {
      throw rest::RestError(400, "query parameter limit=0: must be at least 1");
    }
  }
  return page;
}

std::vector<std::string> applicationStatesOf(const httplib::Request& req) {
  static const std::vector<std::string> known{rest::app_state::kNew,     rest::app_state::kAccepted,
                                              rest::app_state::kRunning, rest::app_state::kFinished,
                                              rest::app_state::kFailed,  rest::app_state::kKilled};
  std::vector<std::string> wanted;
  if (!req.has_param("states")) return wanted;
  std::stringstream list(req.get_param_value("states"));
  for (std::string state; std::getline(list, state, ',');) {
    const std::string upper = toUpper(trim(state));
    if (std::find(known.begin(), known.end(), upper) == known.end()) {
      throw rest::RestError(400, "query parameter states: unknown application state '" +
                                     state.substr(0, 64) + "' (known: NEW, ACCEPTED, RUNNING, " +
                                     "FINISHED, FAILED, KILLED)");
    }
    wanted.push_back(upper);
  }
  if (wanted.empty()) throw rest::RestError(400, "query parameter states is empty");
  return wanted;
}

}  // namespace tide::rm
