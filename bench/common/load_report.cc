#include "bench/common/load_report.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace tide::bench {

ProcessSample sampleProcess(pid_t pid) {
  ProcessSample sample;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  // Fields after "(comm) ": state is field 3; utime and stime are fields 14 and 15.
  const size_t close = text.rfind(')');
  if (close != std::string::npos) {
    std::istringstream fields(text.substr(close + 2));
    std::vector<std::string> after;
    for (std::string field; after.size() < 13 && fields >> field;) after.push_back(field);
    if (after.size() == 13) {
      const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
      sample.cpuSeconds = (std::stod(after[11]) + std::stod(after[12])) / tick;
    }
  }
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) sample.rssKib = std::stoll(line.substr(6));
    if (line.rfind("VmHWM:", 0) == 0) sample.peakRssKib = std::stoll(line.substr(6));
    if (line.rfind("Threads:", 0) == 0) sample.threads = std::stoi(line.substr(8));
  }
  return sample;
}

double selfCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) {
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

Latencies latenciesOf(std::vector<double> ms) {
  Latencies latencies;
  latencies.count = static_cast<int64_t>(ms.size());
  if (ms.empty()) return latencies;
  std::sort(ms.begin(), ms.end());
  const auto rank = [&](double p) {
    const auto index = static_cast<size_t>(std::ceil(p * static_cast<double>(ms.size())));
    return ms[std::min(ms.size(), std::max<size_t>(index, 1)) - 1];
  };
  latencies.p50 = rank(0.50);
  latencies.p99 = rank(0.99);
  latencies.max = ms.back();
  return latencies;
}

void writeLatencies(rest::JsonWriter& w, const char* name, const Latencies& latencies) {
  w.key(name).startObject().field("count", latencies.count);
  if (latencies.count > 0) {
    w.field("p50", latencies.p50).field("p99", latencies.p99).field("max", latencies.max);
  }
  w.endObject();
}

}  // namespace tide::bench
