// Every wire message codec (rest/messages/*.h): the first byte picks the decoder (its index in
// codecs() below, modulo their number), the rest is the JSON text. A decoder either returns a
// message or throws a JSON error naming the field; nothing else escapes. What it returns must
// survive the trip the message makes on the wire: encoded again (toJson), it decodes, and
// encodes to the same JSON (numbers equal to the last bit RapidJSON's default parse keeps: it
// may read a double written in shortest form back one unit in the last place off).
//
// TIDE_FUZZ_WRITE_SEEDS=DIR: instead of fuzzing, write one seed per codec to DIR, each the
// encoder's output for a message as tide sends it (fuzz/corpus/fuzz_messages/ holds them; run
// again after adding a codec: new codecs go at the end of the table so old seeds keep theirs).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "rest/json.h"
#include "rest/messages/cluster.h"
#include "rest/messages/executor.h"
#include "rest/messages/node.h"

namespace {

using namespace tide::rest;

struct Codec {
  const char* name;
  // Decodes, then checks the round trip; throws only what the decoder throws.
  void (*check)(const rapidjson::Value& json);
  // A message as tide sends it, encoded.
  std::string (*sample)();
};

// The same JSON, doubles within a few units in the last place (see the top of the file).
bool sameJson(const rapidjson::Value& a, const rapidjson::Value& b) {
  if (a.IsDouble() && b.IsNumber()) {
    const double x = a.GetDouble();
    const double y = b.GetDouble();
    return x == y || std::fabs(x - y) <= 4 * std::numeric_limits<double>::epsilon() *
                                             std::fmax(std::fabs(x), std::fabs(y));
  }
  if (a.IsObject() && b.IsObject()) {
    if (a.MemberCount() != b.MemberCount()) return false;
    for (auto it = a.MemberBegin(); it != a.MemberEnd(); ++it) {
      auto other = b.FindMember(it->name);
      if (other == b.MemberEnd() || !sameJson(it->value, other->value)) return false;
    }
    return true;
  }
  if (a.IsArray() && b.IsArray()) {
    if (a.Size() != b.Size()) return false;
    for (rapidjson::SizeType i = 0; i < a.Size(); ++i) {
      if (!sameJson(a[i], b[i])) return false;
    }
    return true;
  }
  return a == b;
}

template <typename T>
void roundTrip(const T& decoded, T (*decode)(const rapidjson::Value&)) {
  const std::string once = toJson(decoded);
  T again;
  try {
    again = decode(parseJson(once));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "decoded message does not decode once encoded: %s\n%s\n", e.what(),
                 once.c_str());
    std::abort();
  }
  const std::string twice = toJson(again);
  if (twice != once && !sameJson(parseJson(once), parseJson(twice))) {
    std::fprintf(stderr, "encoding changed after a round trip:\n%s\n%s\n", once.c_str(),
                 twice.c_str());
    std::abort();
  }
}

template <typename T, T (*Decode)(const rapidjson::Value&)>
void checkCodec(const rapidjson::Value& json) {
  roundTrip<T>(Decode(json), Decode);
}

// Decoders with a path argument.
Resource decodeResource(const rapidjson::Value& json) {
  return resourceFromJson(json);
}
TaskLaunch decodeTaskLaunch(const rapidjson::Value& json) {
  return taskLaunchFromJson(json);
}
TaskStatusUpdate decodeTaskStatusUpdate(const rapidjson::Value& json) {
  return taskStatusUpdateFromJson(json);
}

const Resource kResource{2048, 2};

Container sampleContainer() {
  return {"container_1_0001_01_000002", "127.0.0.1:8042", "127.0.0.1:8042", kResource, "0f3c9a"};
}

BlockInput sampleBlockInput() {
  return {"s1", 3, "e2", "http://127.0.0.1:40123", "job-1/s1/3/part-0", 1024};
}

TaskLaunch sampleTaskLaunch() {
  return {7,
          "job-1",
          "s2",
          1,
          0,
          "command",
          {"sh", "-c", "echo 1"},
          {{"SEED", "1"}},
          "/tmp",
          5000,
          0,
          1,
          {sampleBlockInput()},
          "/tmp/out"};
}

TaskStatusUpdate sampleTaskStatusUpdate() {
  return {7,
          TaskState::kFinished,
          0,
          "exited with code 0",
          "warning: x\n",
          120,
          {{0, 1024}, {1, 2048}},
          /*failedInput=*/{}};
}

ApplicationReport sampleReport() {
  return {"application_1_0001",
          "primes",
          "default",
          app_state::kRunning,
          final_status::kUndefined,
          "http://127.0.0.1:4040/",
          "",
          4096,
          3,
          2,
          "appattempt_1_0001_000001",
          "127.0.0.1:8042",
          1700000000000};
}

const std::vector<Codec>& codecs() {
  static const std::vector<Codec> all{
      {"new_application_response",
       checkCodec<NewApplicationResponse, newApplicationResponseFromJson>,
       [] {
         return toJson(NewApplicationResponse{"application_1_0001", kResource});
       }},
      {"application_submission", checkCodec<ApplicationSubmission, applicationSubmissionFromJson>,
       [] {
         return toJson(ApplicationSubmission{"application_1_0001",
                                             "primes",
                                             "default",
                                             "tide-am --job primes.json",
                                             {{"TIDE_AM_TOKEN", "x"}, {"PATH", "/usr/bin"}},
                                             {1024, 1},
                                             2,
                                             "http://127.0.0.1:18080/history/application_1_0001"});
       }},
      {"application_report", checkCodec<ApplicationReport, applicationReportFromJson>,
       [] { return toJson(sampleReport()); }},
      {"application_reports",
       checkCodec<std::vector<ApplicationReport>, applicationReportsFromJson>,
       [] {
         return toJson(std::vector<ApplicationReport>{sampleReport(), sampleReport()});
       }},
      {"app_state", checkCodec<AppStateMessage, appStateFromJson>,
       [] { return toJson(AppStateMessage{app_state::kKilled}); }},
      {"cluster_metrics", checkCodec<ClusterMetrics, clusterMetricsFromJson>,
       [] {
         // Submitted, pending, running, completed, failed, killed; MB allocated, available,
         // total; the same of cores; containers; nodes active, lost, total.
         return toJson(ClusterMetrics{3, 0, 1, 2, 0, 0, 4096, 4096, 8192, 2, 6, 8, 2, 1, 0, 1});
       }},
      {"node_reports", checkCodec<std::vector<NodeReport>, nodeReportsFromJson>,
       [] {
         NodeReport n{"127.0.0.1:8042",
                      "127.0.0.1",
                      "127.0.0.1:8042",
                      node_state::kRunning,
                      1700000000000,
                      2048,
                      6144,
                      2,
                      6,
                      2};
         return toJson(std::vector<NodeReport>{n});
       }},
      {"cluster_info", checkCodec<ClusterInfo, clusterInfoFromJson>,
       [] {
         ClusterInfo info;
         info.id = 1700000000000;
         info.startedOn = 1700000000000;
         info.resourceManagerVersion = "tide-rm";
         return toJson(info);
       }},
      {"allocate_request", checkCodec<AllocateRequest, allocateRequestFromJson>,
       [] {
         AllocateRequest r;
         r.responseId = 4;
         r.progress = 0.5;
         r.asks = {{1, kResource, 3, "*", true}};
         r.releases = {"container_1_0001_01_000003"};
         return toJson(r);
       }},
      {"allocate_response", checkCodec<AllocateResponse, allocateResponseFromJson>,
       [] {
         AllocateResponse r;
         r.responseId = 5;
         r.allocatedContainers = {sampleContainer()};
         r.completedContainers = {{"container_1_0001_01_000004", -105, "COMPLETE", "released"}};
         r.availableResources = {6144, 6};
         r.numClusterNodes = 1;
         return toJson(r);
       }},
      {"finish_application_master_request",
       checkCodec<FinishApplicationMasterRequest, finishApplicationMasterRequestFromJson>,
       [] {
         return toJson(FinishApplicationMasterRequest{final_status::kSucceeded, "done"});
       }},
      {"executor_registration", checkCodec<ExecutorRegistration, executorRegistrationFromJson>,
       [] {
         return toJson(ExecutorRegistration{"e1",
                                            "container_1_0001_01_000002",
                                            "127.0.0.1",
                                            40123,
                                            "127.0.0.1:8042",
                                            2,
                                            4242,
                                            true,
                                            {7, 8},
                                            true,
                                            {"job-1/0/3/part-0"}});
       }},
      {"executor_registered", checkCodec<ExecutorRegistered, executorRegisteredFromJson>,
       [] {
         return toJson(ExecutorRegistered{1000, 2});
       }},
      {"executor_sync", checkCodec<ExecutorSync, executorSyncFromJson>,
       [] {
         ExecutorSync s;
         const TaskStatusUpdate fetchFailed{8,  TaskState::kFetchFailed, -1, "fetch failed", "", 0,
                                            {}, sampleBlockInput()};
         s.updates = {sampleTaskStatusUpdate(), fetchFailed};
         s.running = {9, 10};
         s.freeSlots = 1;
         s.maxWaitMs = 1000;
         return toJson(s);
       }},
      {"executor_sync_reply", checkCodec<ExecutorSyncReply, executorSyncReplyFromJson>,
       [] {
         ExecutorSyncReply r;
         r.launches = {sampleTaskLaunch()};
         r.kills = {3};
         r.dropBlocks = {"job-1/s1"};
         return toJson(r);
       }},
      {"node_registration", checkCodec<NodeRegistration, nodeRegistrationFromJson>,
       [] {
         return toJson(NodeRegistration{"127.0.0.1", 8042, {8192, 8}});
       }},
      {"node_registration_response",
       checkCodec<NodeRegistrationResponse, nodeRegistrationResponseFromJson>,
       [] {
         return toJson(NodeRegistrationResponse{"127.0.0.1:8042", "c2VjcmV0", 1000, "abc123"});
       }},
      {"node_heartbeat", checkCodec<NodeHeartbeat, nodeHeartbeatFromJson>,
       [] {
         NodeHeartbeat h;
         h.containers = {{"container_1_0001_01_000002", "RUNNING", 0, "", {1024, 1}},
                         {"container_1_0001_01_000003", "COMPLETE", 137, "killed", {}}};
         return toJson(h);
       }},
      {"node_heartbeat_response", checkCodec<NodeHeartbeatResponse, nodeHeartbeatResponseFromJson>,
       [] {
         return toJson(NodeHeartbeatResponse{{"container_1_0001_01_000003"}, false});
       }},
      {"container_launch_request",
       checkCodec<ContainerLaunchRequest, containerLaunchRequestFromJson>,
       [] {
         return toJson(ContainerLaunchRequest{"container_1_0001_01_000002",
                                              "application_1_0001",
                                              "0f3c9a",
                                              "tide-executor",
                                              {{"TIDE_EXECUTOR_ID", "e1"}},
                                              kResource});
       }},
      {"container_report", checkCodec<ContainerReport, containerReportFromJson>,
       [] {
         return toJson(ContainerReport{"container_1_0001_01_000002", "application_1_0001",
                                       "RUNNING", 0, "", 4242, kResource, "/tmp/nm/c2", 300});
       }},
      // Added after the first corpus: keep new ones at the end.
      {"register_application_master_request",
       checkCodec<RegisterApplicationMasterRequest, registerApplicationMasterRequestFromJson>,
       [] {
         return toJson(
             RegisterApplicationMasterRequest{"127.0.0.1", 4040, "http://127.0.0.1:4040/"});
       }},
      {"register_application_master_response",
       checkCodec<RegisterApplicationMasterResponse, registerApplicationMasterResponseFromJson>,
       [] {
         return toJson(RegisterApplicationMasterResponse{kResource, {sampleContainer()}});
       }},
      {"finish_application_master_response",
       checkCodec<FinishApplicationMasterResponse, finishApplicationMasterResponseFromJson>,
       [] { return toJson(FinishApplicationMasterResponse{true}); }},
      {"commit_request", checkCodec<CommitRequest, commitRequestFromJson>,
       [] { return toJson(CommitRequest{7}); }},
      {"commit_decision", checkCodec<CommitDecision, commitDecisionFromJson>,
       [] {
         return toJson(CommitDecision{false, "another attempt committed"});
       }},
      {"resource", checkCodec<Resource, decodeResource>, [] { return toJson(kResource); }},
      {"task_launch", checkCodec<TaskLaunch, decodeTaskLaunch>,
       [] { return toJson(sampleTaskLaunch()); }},
      {"task_status_update", checkCodec<TaskStatusUpdate, decodeTaskStatusUpdate>,
       [] { return toJson(sampleTaskStatusUpdate()); }},
  };
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* dir = std::getenv("TIDE_FUZZ_WRITE_SEEDS");
  if (dir == nullptr) return 0;
  const auto& all = codecs();
  for (size_t i = 0; i < all.size(); ++i) {
    const std::string json = all[i].sample();
    all[i].check(parseJson(json));  // a seed must be a message the decoder takes
    std::ofstream(std::string(dir) + "/" + all[i].name, std::ios::binary)
        << static_cast<char>(i) << json;
  }
  std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto& all = codecs();
  const Codec& codec = all[data[0] % all.size()];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    codec.check(parseJson(text));
  } catch (const JsonParseError&) {
  } catch (const JsonFieldError&) {
  }
  return 0;
}
