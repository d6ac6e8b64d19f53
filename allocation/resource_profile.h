#pragma once

// Spark's ResourceProfile, as far as tide's executors have a shape: a stage may ask for its own
// executor cores and memory (the job JSON's "executor": {"cores": 8, "memory": "4g"}); stages
// that do not use the default profile, the application's executor.cores and executor.memory.
// Each distinct shape is one profile with its own id; executors are started for one profile
// and run only tasks of stages of that profile. Task cpus stay a property of the stage (its
// "cpus"), so that a profile's tasks per executor is executor cores / the stage's cpus.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tide::allocation {

// Spark's DEFAULT_RESOURCE_PROFILE_ID.
constexpr int kDefaultProfileId = 0;

struct ResourceProfile {
  int id = kDefaultProfileId;
  int executorCores = 1;
  int64_t executorMemoryMb = 0;  // the executor's heap (executor.memory), without overhead

  bool sameShape(const ResourceProfile& other) const {
    return executorCores == other.executorCores && executorMemoryMb == other.executorMemoryMb;
  }
  // "profile 1 (8 cores, 4096 MB)": how decisions and logs name a profile.
  std::string describe() const {
    // Memory unknown (0: the simulator models cores only) is left out.
    return "profile " + std::to_string(id) + " (" + std::to_string(executorCores) +
           (executorCores == 1 ? " core" : " cores") +
           (executorMemoryMb > 0 ? ", " + std::to_string(executorMemoryMb) + " MB)" : ")");
  }
};

// The application's profiles: the default one (id 0) and one per distinct shape a stage asked
// for, numbered in the order they were first asked for (Spark's ResourceProfileManager). A
// stage asking for the default shape uses the default profile.
class ResourceProfiles {
 public:
  explicit ResourceProfiles(ResourceProfile defaultProfile) {
    defaultProfile.id = kDefaultProfileId;
    profiles_.emplace(kDefaultProfileId, defaultProfile);
  }

  // The profile of this shape, added when new. `added` says whether it was.
  const ResourceProfile& profileOfShape(int executorCores, int64_t executorMemoryMb,
                                        bool* added = nullptr) {
    ResourceProfile wanted;
    wanted.executorCores = executorCores;
    wanted.executorMemoryMb = executorMemoryMb;
    for (const auto& [id, profile] : profiles_) {
      if (profile.sameShape(wanted)) {
        if (added != nullptr) *added = false;
        return profile;
      }
    }
    wanted.id = profiles_.rbegin()->first + 1;
    if (added != nullptr) *added = true;
    return profiles_.emplace(wanted.id, wanted).first->second;
  }
  // Recovery: a profile the previous attempt numbered, kept with its id.
  void restore(const ResourceProfile& profile) { profiles_.emplace(profile.id, profile); }

  const ResourceProfile* find(int id) const {
    auto it = profiles_.find(id);
    return it == profiles_.end() ? nullptr : &it->second;
  }
  const ResourceProfile& defaultProfile() const { return profiles_.at(kDefaultProfileId); }
  const std::map<int, ResourceProfile>& all() const { return profiles_; }

 private:
  std::map<int, ResourceProfile> profiles_;
};

}  // namespace tide::allocation
