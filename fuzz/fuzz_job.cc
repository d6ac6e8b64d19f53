// Job files (am/scheduler/job.h): any bytes either parse into a Job or throw a ConfigError /
// JSON error; nothing else (no crash, no other exception, no sanitizer finding).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

#include "am/scheduler/job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    tide::am::Job job =
        tide::am::parseJob(std::string_view(reinterpret_cast<const char*>(data), size));
    (void)job;
  } catch (const std::runtime_error&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
