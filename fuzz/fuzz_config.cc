// Properties files, --conf values, durations and sizes (common/config.h): the input is a
// properties file; every value it sets is then read back with the typed getter of its key, and
// the first line is also tried as a duration and as a size. Bad text is a ConfigError or
// std::invalid_argument; nothing else escapes.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>

#include "common/config.h"

namespace {

// One scratch file per fuzzing process.
const std::string& scratchFile() {
  static const std::string path = [] {
    char name[] = "/tmp/tide-fuzz-config-XXXXXX";
    const int fd = ::mkstemp(name);
    if (fd >= 0) ::close(fd);
    return std::string(name);
  }();
  return path;
}

struct RemoveScratch {
  ~RemoveScratch() { ::unlink(scratchFile().c_str()); }
} removeScratch;

void readEveryKey(const tide::Properties& properties) {
  for (const auto& [key, entry] : properties.entries()) {
    try {
      (void)properties.getString(key);
      (void)properties.getInt(key);
    } catch (const tide::ConfigError&) {
    } catch (const std::logic_error&) {
      // not a key of the table: getters are not for it
    }
    for (auto get :
         {+[](const tide::Properties&p, const std::string&k) { (void)p.getBool(k); },
          +[](const tide::Properties&p, const std::string&k) { (void)p.getDouble(k); },
          +[](const tide::Properties&p, const std::string&k) { (void)p.getDuration(k); },
          +[](const tide::Properties&p, const std::string&k) { (void)p.getSizeBytes(k); }}) {
      try {
        get(properties, key);
      } catch (const tide::ConfigError&) {
      } catch (const std::logic_error&) {
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string firstLine = text.substr(0, text.find('\n'));
  for (int64_t unit : {int64_t{1}, int64_t{1000}}) {
    try {
      (void)tide::parseDuration(firstLine, unit);
    } catch (const std::invalid_argument&) {
    }
    try {
      (void)tide::parseSize(firstLine, unit);
    } catch (const std::invalid_argument&) {
    }
  }
  // As --conf key=value.
  tide::Properties conf;
  const size_t equals = firstLine.find('=');
  if (equals != std::string::npos) {
    try {
      conf.set(firstLine.substr(0, equals), firstLine.substr(equals + 1));
      readEveryKey(conf);
    } catch (const tide::ConfigError&) {
    }
  }
  // As a properties file.
  {
    std::ofstream out(scratchFile(), std::ios::binary | std::ios::trunc);
    out << text;
  }
  tide::Properties file;
  try {
    file.loadFile(scratchFile());
    readEveryKey(file);
  } catch (const tide::ConfigError&) {
  }
  return 0;
}
