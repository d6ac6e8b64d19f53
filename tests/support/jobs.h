#pragma once

// Job files for the tests that run jobs on a real AM.

#include <string>

namespace tide::testing_support {

// The JSON of a job `name` of one stage (`stage`) of `tasks` tasks, each sleeping `sleepMs` ms
// in the executor (the builtin "sleep").
inline std::string sleepJob(const std::string& name, int tasks, int sleepMs,
                            const std::string& stage = "work") {
  return R"({"name": ")" + name + R"(", "stages": [{"id": ")" + stage + R"(", "tasks": )" +
         std::to_string(tasks) + R"(, "builtin": "sleep", "sleep_ms": )" + std::to_string(sleepMs) +
         "}]}";
}

}  // namespace tide::testing_support
