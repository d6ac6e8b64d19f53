// Slurm's JSON as slurmrestd answers it (am/slurm/json.h): job lists, submit responses, error
// lists and time limits. Bad input is a JsonParseError / JsonFieldError (std::invalid_argument
// for a time limit); nothing else escapes.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "am/slurm/json.h"
#include "rest/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    (void)tide::am::parseSlurmTimeLimit(text);
  } catch (const std::invalid_argument&) {
  }
  try {
    const rapidjson::Document document = tide::rest::parseJson(text);
    try {
      for (const tide::am::SlurmJob& job : tide::am::slurmJobsFromJson(document)) {
        (void)tide::am::slurmJobEnd(job, false);
        (void)tide::am::slurmJobPhase(job.state);
      }
    } catch (const tide::rest::JsonFieldError&) {
    }
    try {
      (void)tide::am::slurmSubmitResponseFromJson(document);
    } catch (const tide::rest::JsonFieldError&) {
    }
    try {
      const auto errors = tide::am::slurmErrorsFromJson(document);
      (void)tide::am::describeSlurmErrors(errors);
      (void)tide::am::isSlurmRejection(errors);
    } catch (const tide::rest::JsonFieldError&) {
    }
  } catch (const tide::rest::JsonParseError&) {
  }
  return 0;
}
