#include "deploy/master_location.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "common/config.h"
#include "rest/json.h"

namespace tide::deploy {
namespace {

bool isHttpUrl(const std::string& text) {
  return text.rfind("http://", 0) == 0 || text.rfind("https://", 0) == 0;
}

struct Pointer {
  std::string master;
  std::string secretFile;
  int64_t pid = 0;
};

std::optional<Pointer> readPointer(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  try {
    const rapidjson::Document json = rest::parseJson(text.str());
    const rest::JsonObjectReader reader(json);
    return Pointer{reader.requireString("master"), reader.requireString("secretFile"),
                   reader.requireInt64("pid")};
  } catch (const std::exception&) {
    return std::nullopt;  // half-written or foreign: as if there were none
  }
}

bool processAlive(int64_t pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

}  // namespace

MasterLocation resolveMaster(const std::optional<std::string>& option,
                             const std::string& directory) {
  MasterLocation location;
  if (option) {
    location = {*option, std::nullopt, "--master"};
  } else if (const char* env = getenv("TIDE_MASTER"); env != nullptr && *env != '\0') {
    location = {env, std::nullopt, "TIDE_MASTER"};
  } else if (const auto pointer = readPointer(directory + "/" + kEmbeddedClusterFile);
             pointer && processAlive(pointer->pid)) {
    location = {pointer->master, pointer->secretFile,
                "the tide run in this directory (pid " + std::to_string(pointer->pid) + ")"};
  } else {
    location = {kDefaultMaster, std::nullopt, "the default"};
  }
  if (!isHttpUrl(location.url)) {
    throw ConfigError(location.origin + " " + location.url +
                      ": expected http://HOST:PORT or https://HOST:PORT");
  }
  return location;
}

void useMasterCredentials(const MasterLocation& location, Properties& props) {
  if (!location.secretFile) return;
  const char* token = getenv("TIDE_RM_TOKEN");
  if (props.has("rm.tokenFile") || props.has("rm.secretFile") || (token && *token)) return;
  props.set("rm.secretFile", *location.secretFile);
}

EmbeddedClusterPointer::EmbeddedClusterPointer(const std::string& directory,
                                               const std::string& rmAddress,
                                               const std::string& secretFile, std::ostream& warn) {
  const std::string path = directory + "/" + kEmbeddedClusterFile;
  try {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::filesystem::create_directories(parent);
    ::chmod(parent.c_str(), 0700);
    rest::JsonWriter w;
    w.startObject()
        .field("master", rmAddress)
        .field("secretFile", secretFile)
        .field("pid", static_cast<int64_t>(::getpid()))
        .endObject();
    // Written aside and renamed: a reader never sees half a file.
    const std::string partial = path + "." + std::to_string(::getpid());
    {
      std::ofstream out(partial, std::ios::trunc);
      ::chmod(partial.c_str(), 0600);
      out << w.str() << "\n";
      if (!out.flush()) throw std::runtime_error("cannot write " + partial);
    }
    std::filesystem::rename(partial, path);
    path_ = path;
  } catch (const std::exception& e) {
    warn << "tide: warning: cannot write " << path << " (" << e.what()
         << "): `tide app` and `tide status` here need --master " << rmAddress << "\n";
  }
}

EmbeddedClusterPointer::~EmbeddedClusterPointer() {
  if (path_.empty()) return;
  // A later `tide run` in the same directory may have replaced it: leave that one.
  const auto pointer = readPointer(path_);
  if (pointer && pointer->pid == static_cast<int64_t>(::getpid())) {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }
}

}  // namespace tide::deploy
