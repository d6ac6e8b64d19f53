#include "am/slurm/json.h"

#include <cctype>
#include <stdexcept>

#include "rest/json.h"
#include "rest/messages/node.h"

namespace tide::am {
namespace {

using rest::JsonFieldError;
using rest::JsonWriter;

const rapidjson::Value* member(const rapidjson::Value& object, const char* key) {
  if (!object.IsObject()) return nullptr;
  auto it = object.FindMember(key);
  if (it == object.MemberEnd() || it->value.IsNull()) return nullptr;
  return &it->value;
}

// A number as v0.0.38 writes it, or as later plugins do: {"set": true, "number": N}.
std::optional<int64_t> numberOf(const rapidjson::Value* value) {
  if (value == nullptr) return std::nullopt;
  if (value->IsInt64()) return value->GetInt64();
  if (value->IsUint64()) return static_cast<int64_t>(value->GetUint64());
  if (value->IsDouble()) {
    // Out of int64_t's range (or not finite) is no number Slurm means: absent, not UB.
    const double number = value->GetDouble();
    if (!(number >= -9.2e18 && number <= 9.2e18)) return std::nullopt;
    return static_cast<int64_t>(number);
  }
  if (value->IsObject()) {
    const rapidjson::Value* set = member(*value, "set");
    if (set != nullptr && set->IsBool() && !set->GetBool()) return std::nullopt;
    return numberOf(member(*value, "number"));
  }
  return std::nullopt;
}

std::string stringOf(const rapidjson::Value* value) {
  if (value == nullptr || !value->IsString()) return "";
  return std::string(value->GetString(), value->GetStringLength());
}

// job_state: "RUNNING" (v0.0.38) or ["RUNNING"] / ["CANCELLED", "COMPLETING"] (later).
std::string stateOf(const rapidjson::Value* value) {
  if (value == nullptr) return "";
  if (value->IsString()) return stringOf(value);
  if (value->IsArray() && !value->Empty()) return stringOf(&(*value)[0]);
  return "";
}

// exit_code: a wait(2) status (v0.0.38), or {"return_code": N, "signal": {"id": S}} (later).
int64_t waitStatusOf(const rapidjson::Value* value) {
  if (value == nullptr) return 0;
  if (value->IsObject() && member(*value, "return_code") != nullptr) {
    const int64_t code = numberOf(member(*value, "return_code")).value_or(0);
    const rapidjson::Value* signal = member(*value, "signal");
    const int64_t sig = signal != nullptr ? numberOf(member(*signal, "id")).value_or(0) : 0;
    return sig != 0 ? sig : (code & 0xff) << 8;
  }
  return numberOf(value).value_or(0);
}

std::string jobLabel(const SlurmJob& job) {
  std::string label = "Slurm job " + std::to_string(job.jobId) + " " + job.state;
  if (!job.stateReason.empty() && job.stateReason != "None") label += " (" + job.stateReason + ")";
  if (!job.stateDescription.empty()) label += ": " + job.stateDescription;
  return label;
}

int64_t parseNumber(const std::string& text, const std::string& whole) {
  if (text.empty() || text.size() > 9) {
    throw std::invalid_argument("'" + whole + "' is not a Slurm time (e.g. 90, 1:30:00, 2-0)");
  }
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      throw std::invalid_argument("'" + whole + "' is not a Slurm time (e.g. 90, 1:30:00, 2-0)");
    }
  }
  return std::stoll(text);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

}  // namespace

std::vector<SlurmError> slurmErrorsFromJson(const rapidjson::Value& response) {
  std::vector<SlurmError> errors;
  const rapidjson::Value* array = member(response, "errors");
  if (array == nullptr || !array->IsArray()) return errors;
  for (const auto& entry : array->GetArray()) {
    SlurmError error;
    error.code =
        static_cast<int>(numberOf(member(entry, "error_code"))
                             .value_or(numberOf(member(entry, "error_number")).value_or(0)));
    const std::string text = stringOf(member(entry, "error"));
    const std::string description = stringOf(member(entry, "description"));
    error.message = text;
    if (!description.empty() && description != text) {
      error.message = text.empty() ? description : text + ": " + description;
    }
    if (error.message.empty()) error.message = "unknown error";
    errors.push_back(std::move(error));
  }
  return errors;
}

std::string describeSlurmErrors(const std::vector<SlurmError>& errors) {
  std::string text;
  for (const auto& error : errors) {
    if (!text.empty()) text += "; ";
    text += error.message;
    if (error.code != 0) text += " (error " + std::to_string(error.code) + ")";
  }
  return text;
}

bool isSlurmRejection(const std::vector<SlurmError>& errors) {
  for (const auto& error : errors) {
    const bool badRequest = error.code >= 2000 && error.code < 3000;
    const bool unparsable = error.code >= 9000 && error.code < 10000;  // slurmrestd's parser
    if (badRequest || unparsable) return true;
  }
  return false;
}

std::string slurmSubmissionJson(const SlurmJobSpec& spec) {
  JsonWriter w;
  w.startObject().key("job").startObject();
  w.field("name", spec.name);
  if (!spec.partition.empty()) w.field("partition", spec.partition);
  if (!spec.account.empty()) w.field("account", spec.account);
  if (!spec.qos.empty()) w.field("qos", spec.qos);
  if (spec.timeLimitMinutes) w.field("time_limit", *spec.timeLimitMinutes);
  // One task on one node: the executor is a single process that runs its tasks itself.
  w.key("nodes").startArray().value(1).value(1).endArray();
  w.field("tasks", 1).field("cpus_per_task", spec.cpusPerTask);
  if (spec.memoryPerNodeMiB > 0) w.field("memory_per_node", spec.memoryPerNodeMiB);
  if (!spec.workingDirectory.empty()) w.field("current_working_directory", spec.workingDirectory);
  if (!spec.standardOutput.empty()) w.field("standard_output", spec.standardOutput);
  if (!spec.standardError.empty()) w.field("standard_error", spec.standardError);
  if (!spec.comment.empty()) w.field("comment", spec.comment);
  // Executors are started again by the AM if lost; a requeued one would come back unasked.
  w.field("requeue", false);
  w.key("environment").startObject();
  for (const auto& [name, value] : spec.environment) w.field(name, value);
  w.endObject();
  w.endObject();
  w.field("script", spec.script);
  w.endObject();
  return w.str();
}

SlurmSubmitResponse slurmSubmitResponseFromJson(const rapidjson::Value& response) {
  SlurmSubmitResponse submitted;
  submitted.errors = slurmErrorsFromJson(response);
  submitted.jobId = numberOf(member(response, "job_id")).value_or(0);
  if (submitted.jobId <= 0 && submitted.errors.empty()) {
    throw JsonFieldError("job_id", "missing from slurmrestd's answer, and no errors given");
  }
  return submitted;
}

std::string slurmCommentUpdateJson(const std::string& comment) {
  JsonWriter w;
  w.startObject().field("comment", comment).endObject();
  return w.str();
}

SlurmJobPhase slurmJobPhase(const std::string& state) {
  // Slurm's job_state_string(): the flags (COMPLETING, CONFIGURING, REQUEUED, ...) win over the
  // base state, so a job whose script ended shows COMPLETING until its node has cleaned up.
  static const char* const kRunning[] = {"RUNNING",   "COMPLETING", "SUSPENDED", "STOPPED",
                                         "SIGNALING", "STAGE_OUT",  "RESIZING"};
  static const char* const kEnded[] = {"COMPLETED",     "CANCELLED", "FAILED",      "TIMEOUT",
                                       "NODE_FAIL",     "PREEMPTED", "BOOT_FAIL",   "DEADLINE",
                                       "OUT_OF_MEMORY", "REVOKED",   "SPECIAL_EXIT"};
  for (const char* s : kRunning) {
    if (state == s) return SlurmJobPhase::kRunning;
  }
  for (const char* s : kEnded) {
    if (state == s) return SlurmJobPhase::kEnded;
  }
  // PENDING, CONFIGURING (nodes booting), REQUEUED, REQUEUE_HOLD, RESV_DEL_HOLD, and states a
  // newer Slurm may add: not running yet.
  return SlurmJobPhase::kPending;
}

std::vector<SlurmJob> slurmJobsFromJson(const rapidjson::Value& response) {
  const rapidjson::Value* array = member(response, "jobs");
  if (array == nullptr || !array->IsArray()) {
    throw JsonFieldError("jobs", "missing from slurmrestd's answer or not a list");
  }
  std::vector<SlurmJob> jobs;
  jobs.reserve(array->Size());
  size_t index = 0;
  for (const auto& entry : array->GetArray()) {
    SlurmJob job;
    job.jobId = numberOf(member(entry, "job_id")).value_or(0);
    if (job.jobId <= 0) {
      throw JsonFieldError("jobs[" + std::to_string(index) + "].job_id",
                           "missing or not a positive integer");
    }
    job.name = stringOf(member(entry, "name"));
    job.state = stateOf(member(entry, "job_state"));
    job.stateReason = stringOf(member(entry, "state_reason"));
    job.stateDescription = stringOf(member(entry, "state_description"));
    job.exitCode = waitStatusOf(member(entry, "exit_code"));
    job.batchHost = stringOf(member(entry, "batch_host"));
    job.comment = stringOf(member(entry, "comment"));
    job.startTime = numberOf(member(entry, "start_time")).value_or(0);
    jobs.push_back(std::move(job));
    ++index;
  }
  return jobs;
}

int exitCodeOfWaitStatus(int64_t waitStatus) {
  const int signal = static_cast<int>(waitStatus & 0x7f);
  if (signal != 0) return 128 + signal;
  return static_cast<int>((waitStatus >> 8) & 0xff);
}

SlurmJobEnd slurmJobEnd(const SlurmJob& job, bool cancelledByAm) {
  namespace es = rest::exit_status;
  const int code = exitCodeOfWaitStatus(job.exitCode);
  const std::string label = jobLabel(job);
  if (job.state == "COMPLETED") return {code, label};
  if (job.state == "FAILED") return {code != 0 ? code : 1, label};
  if (job.state == "TIMEOUT") return {code != 0 ? code : 1, label + ": reached its time limit"};
  if (job.state == "CANCELLED") {
    if (cancelledByAm) return {es::kKilledByAppMaster, label + ": cancelled by the AM"};
    return {es::kKilledByResourceManager, label + ": cancelled in Slurm (scancel)"};
  }
  if (job.state == "NODE_FAIL" || job.state == "BOOT_FAIL") {
    return {es::kAborted, label + ": node failure"};
  }
  if (job.state == "PREEMPTED") return {es::kPreempted, label};
  if (job.state == "OUT_OF_MEMORY") return {es::kKilledExceededPmem, label};
  return {es::kKilledByResourceManager, label};
}

std::optional<int64_t> parseSlurmTimeLimit(const std::string& text) {
  std::string upper;
  for (char c : text) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (upper.empty() || upper == "UNLIMITED" || upper == "INFINITE") return std::nullopt;
  int64_t days = 0;
  std::string clock = text;
  const size_t dash = text.find('-');
  if (dash != std::string::npos) {
    days = parseNumber(text.substr(0, dash), text);
    clock = text.substr(dash + 1);
  }
  const std::vector<std::string> parts = split(clock, ':');
  if (parts.size() > 3) {
    throw std::invalid_argument("'" + text + "' is not a Slurm time (e.g. 90, 1:30:00, 2-0)");
  }
  int64_t seconds = 0;
  if (dash != std::string::npos) {
    // D-HH, D-HH:MM, D-HH:MM:SS
    seconds = parseNumber(parts[0], text) * 3600;
    if (parts.size() > 1) seconds += parseNumber(parts[1], text) * 60;
    if (parts.size() > 2) seconds += parseNumber(parts[2], text);
  } else if (parts.size() == 1) {
    seconds = parseNumber(parts[0], text) * 60;  // MM
  } else if (parts.size() == 2) {
    seconds = parseNumber(parts[0], text) * 60 + parseNumber(parts[1], text);  // MM:SS
  } else {
    seconds = parseNumber(parts[0], text) * 3600 + parseNumber(parts[1], text) * 60 +
              parseNumber(parts[2], text);  // HH:MM:SS
  }
  seconds += days * 86400;
  if (seconds <= 0) throw std::invalid_argument("'" + text + "' is not a positive time limit");
  return (seconds + 59) / 60;
}

}  // namespace tide::am
