#include "am/scheduler/scheduling_pool.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "common/config.h"
#include "common/strings.h"

namespace tide::am {
namespace {

SchedulingMode parseMode(const std::string& text, const std::string& where) {
  if (text == "FIFO") return SchedulingMode::kFifo;
  if (text == "FAIR") return SchedulingMode::kFair;
  throw ConfigError(where + ": schedulingMode must be FIFO or FAIR, got '" + text + "'");
}

int parseNonNegative(const std::string& text, const std::string& where, int minimum) {
  try {
    size_t used = 0;
    const int value = std::stoi(text, &used);
    if (used == text.size() && value >= minimum) return value;
  } catch (const std::exception&) {
  }
  throw ConfigError(where + ": expected an integer of at least " + std::to_string(minimum) +
                    ", got '" + text + "'");
}

std::string trimmed(const std::string& text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r\n");
  return text.substr(start, end - start + 1);
}

PoolConfig& poolNamed(std::vector<PoolConfig>& pools, const std::string& name) {
  for (PoolConfig& pool : pools) {
    if (pool.name == name) return pool;
  }
  pools.push_back(PoolConfig{name});
  return pools.back();
}

// Sets the pool setting `field` (schedulingMode, weight or minShare, the same in both file
// formats) from `value`; false when there is no such setting.
bool setPoolField(PoolConfig& pool, const std::string& field, const std::string& value,
                  const std::string& where) {
  if (field == "schedulingMode") {
    pool.mode = parseMode(value, where);
  } else if (field == "weight") {
    pool.weight = parseNonNegative(value, where, 1);
  } else if (field == "minShare") {
    pool.minShare = parseNonNegative(value, where, 0);
  } else {
    return false;
  }
  return true;
}

}  // namespace

const char* schedulingModeName(SchedulingMode mode) {
  return mode == SchedulingMode::kFair ? "FAIR" : "FIFO";
}

std::vector<PoolConfig> parsePoolsXml(std::string_view xml, const std::string& source) {
  std::vector<PoolConfig> pools;
  const std::string text(xml);
  if (text.find("<allocations") == std::string::npos) {
    throw ConfigError(source + ": expected an <allocations> element");
  }
  static const std::regex poolPattern(
      R"re(<pool\s+name\s*=\s*"([^"]*)"\s*(/>|>([\s\S]*?)</pool>))re");
  static const std::regex fieldPattern(R"(<(\w+)>\s*([^<]*?)\s*</\1>)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), poolPattern);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1];
    if (name.empty()) throw ConfigError(source + ": a <pool> has an empty name");
    PoolConfig& pool = poolNamed(pools, name);
    const std::string body = (*it)[3];
    for (auto field = std::sregex_iterator(body.begin(), body.end(), fieldPattern);
         field != std::sregex_iterator(); ++field) {
      const std::string key = (*field)[1];
      const std::string value = (*field)[2];
      const std::string where = source + ": pool '" + name + "' " + key;
      if (!setPoolField(pool, key, value, where)) {
        throw ConfigError(source + ": pool '" + name + "': unknown element <" + key + ">");
      }
    }
  }
  return pools;
}

std::vector<PoolConfig> parsePoolsProperties(std::string_view text, const std::string& source) {
  std::vector<PoolConfig> pools;
  std::istringstream lines{std::string(text)};
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    line = trimmed(line);
    if (line.empty() || line[0] == '#' || line[0] == '!') continue;
    const size_t split = line.find_first_of(" \t=:");
    const std::string key = line.substr(0, split);
    std::string value = split == std::string::npos ? "" : trimmed(line.substr(split + 1));
    if (!value.empty() && (value[0] == '=' || value[0] == ':')) value = trimmed(value.substr(1));
    const std::string where = source + ":" + std::to_string(number) + ": " + key;
    // pool.<name>.<field>; the name may itself contain dots.
    const size_t last = key.rfind('.');
    if (key.rfind("pool.", 0) != 0 || last == std::string::npos || last <= 5) {
      throw ConfigError(where + ": expected pool.<name>.weight, .minShare or .schedulingMode");
    }
    const std::string name = key.substr(5, last - 5);
    const std::string field = key.substr(last + 1);
    PoolConfig& pool = poolNamed(pools, name);
    if (!setPoolField(pool, field, value, where)) {
      throw ConfigError(where + ": unknown pool setting '" + field + "'");
    }
  }
  return pools;
}

std::vector<PoolConfig> loadPoolsFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ConfigError("scheduler.allocation.file: cannot read '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  const size_t first = content.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && content[first] == '<') return parsePoolsXml(content, path);
  return parsePoolsProperties(content, path);
}

bool fairSchedulingBefore(const FairShareState& a, const FairShareState& b) {
  const bool aNeedy = a.runningTasks < a.minShare;
  const bool bNeedy = b.runningTasks < b.minShare;
  if (aNeedy != bNeedy) return aNeedy;
  if (aNeedy) {
    const double aRatio = static_cast<double>(a.runningTasks) / std::max(a.minShare, 1);
    const double bRatio = static_cast<double>(b.runningTasks) / std::max(b.minShare, 1);
    if (aRatio != bRatio) return aRatio < bRatio;
  } else {
    const double aRatio = static_cast<double>(a.runningTasks) / std::max(a.weight, 1);
    const double bRatio = static_cast<double>(b.runningTasks) / std::max(b.weight, 1);
    if (aRatio != bRatio) return aRatio < bRatio;
  }
  return a.name < b.name;
}

}  // namespace tide::am
