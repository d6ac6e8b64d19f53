#pragma once

// A strict reader of the Prometheus text exposition format (0.0.4) for tests: every line is
// a "# HELP", a "# TYPE" or a sample `name{label="value",...} value`; every sample belongs to
// a family typed before it. Returns the samples keyed by their name and label text.

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tide::testing_support {

struct PrometheusText {
  std::map<std::string, std::string> types;  // family -> counter, gauge, histogram
  std::map<std::string, double> samples;     // `name{labels}` as written -> value
  std::string error;                         // the first problem, "" when it parsed

  bool has(const std::string& series) const { return samples.count(series) != 0; }
  double at(const std::string& series) const {
    auto it = samples.find(series);
    return it == samples.end() ? -1 : it->second;
  }
};

// The metric families tide-am's /metrics exports (am/status/metrics.h), each typed.
inline const std::vector<std::string>& tideAmMetricFamilies() {
  static const std::vector<std::string> families = {"tide_executors",
                                                    "tide_allocation_target_executors",
                                                    "tide_allocation_max_needed_executors",
                                                    "tide_tasks",
                                                    "tide_tasks_completed_total",
                                                    "tide_task_duration_seconds",
                                                    "tide_allocation_tick_duration_seconds",
                                                    "tide_executor_failures_total",
                                                    "tide_rm_requests_total",
                                                    "tide_rm_request_duration_seconds",
                                                    "tide_application_master_memory_bytes"};
  return families;
}

inline PrometheusText parsePrometheusText(const std::string& text) {
  static const std::regex helpLine(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$)");
  static const std::regex typeLine(
      R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$)");
  static const std::regex sampleLine(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")"
      R"((?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*\})? )"
      R"((-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|\+Inf|-Inf|NaN)$)");
  PrometheusText out;
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    std::smatch m;
    auto fail = [&](const std::string& why) {
      if (out.error.empty())
        out.error = "line " + std::to_string(number) + ": " + why + ": " + line;
    };
    if (line.empty()) continue;
    if (line[0] == '#') {
      if (std::regex_match(line, m, typeLine)) {
        if (out.types.count(m[1])) fail("family typed twice");
        out.types[m[1]] = m[2];
      } else if (!std::regex_match(line, m, helpLine)) {
        fail("a comment that is neither HELP nor TYPE");
      }
      continue;
    }
    if (!std::regex_match(line, m, sampleLine)) {
      fail("not `name{labels} value`");
      continue;
    }
    std::string family = m[1];
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      const std::string s = suffix;
      if (family.size() > s.size() && family.compare(family.size() - s.size(), s.size(), s) == 0 &&
          out.types.count(family.substr(0, family.size() - s.size())) &&
          out.types[family.substr(0, family.size() - s.size())] == "histogram") {
        family = family.substr(0, family.size() - s.size());
        break;
      }
    }
    if (!out.types.count(family)) fail("a sample of a family without # TYPE");
    const std::string value = m[3];
    const double parsed = value == "+Inf"   ? 1e308 * 10
                          : value == "-Inf" ? -1e308 * 10
                          : value == "NaN"  ? 0
                                            : std::stod(value);
    const std::string series = std::string(m[1]) + std::string(m[2]);
    if (out.samples.count(series)) fail("a series written twice");
    out.samples[series] = parsed;
  }
  return out;
}

}  // namespace tide::testing_support
