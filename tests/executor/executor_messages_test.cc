// The AM <-> executor wire codecs: every message survives a round trip, and every bad field is
// refused with an error naming it, the way the AM's 400 will.

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "rest/json.h"
#include "rest/messages/executor.h"

namespace tide::rest {
namespace {

TaskLaunch sampleLaunch(int64_t taskId) {
  TaskLaunch launch;
  launch.taskId = taskId;
  launch.jobId = "j1";
  launch.stageId = "s2";
  launch.index = 7;
  launch.attempt = 1;
  launch.kind = "command";
  launch.argv = {"sh", "-c", "echo \"hi\" && exit 3"};
  launch.env = {{"A", "1"}, {"UNICODE", "\xc3\xa9t\xc3\xa9"}};
  launch.cwd = "/tmp/x";
  launch.timeoutMs = 5000;
  launch.sleepMs = 0;
  launch.cpus = 2;
  return launch;
}

TaskStatusUpdate sampleUpdate(int64_t taskId) {
  TaskStatusUpdate update;
  update.taskId = taskId;
  update.state = rest::TaskState::kFailed;
  update.exitCode = 137;
  update.reason = "killed by signal 9";
  update.stderrTail = "line 1\nline \"2\"\t\x01\n";
  update.durationMs = 1234;
  return update;
}

// The fields a round trip keeps, as one comparable tuple (a failure prints both tuples).
auto fieldsOf(const TaskLaunch& l) {
  return std::tie(l.taskId, l.jobId, l.stageId, l.index, l.attempt, l.kind, l.argv, l.env, l.cwd,
                  l.timeoutMs, l.sleepMs, l.cpus);
}

auto fieldsOf(const ExecutorRegistration& r) {
  return std::tie(r.executorId, r.containerId, r.host, r.port, r.cores, r.pid);
}

auto fieldsOf(const TaskStatusUpdate& u) {
  return std::tie(u.taskId, u.state, u.exitCode, u.reason, u.stderrTail, u.durationMs);
}

template <typename Message>
void expectSame(const Message& a, const Message& b) {
  EXPECT_EQ(fieldsOf(a), fieldsOf(b));
}

template <typename Message>
void expectSameEach(const std::vector<Message>& a, const std::vector<Message>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) expectSame(a[i], b[i]);
}

// Parses `text` and expects `decode` to refuse it naming `field`.
template <typename Decode>
void expectFieldError(const std::string& text, Decode decode, const std::string& field) {
  rapidjson::Document json = parseJson(text);
  try {
    decode(json);
    ADD_FAILURE() << "accepted " << text;
  } catch (const JsonFieldError& error) {
    EXPECT_EQ(error.fieldPath(), field) << error.what();
    EXPECT_NE(std::string(error.what()).find(field), std::string::npos) << error.what();
  }
}

TEST(ExecutorMessagesTest, RegistrationRoundTrips) {
  // Not resumed, so without running tasks or blocks.
  const ExecutorRegistration registration{"e3",
                                          "container_1_0001_01_000004",
                                          "node-1",
                                          4040,
                                          /*node=*/"",
                                          /*cores=*/8,
                                          /*pid=*/123456,
                                          false,
                                          {},
                                          false,
                                          {}};
  expectSame(executorRegistrationFromJson(parseJson(toJson(registration))), registration);
}

TEST(ExecutorMessagesTest, AResumedRegistrationCarriesItsRunningTasksAndBlocks) {
  ExecutorRegistration registration;
  registration.executorId = "e3";
  registration.cores = 2;
  EXPECT_FALSE(executorRegistrationFromJson(parseJson(toJson(registration))).blocksReported)
      << "a first registration reports no blocks";
  EXPECT_EQ(toJson(registration).find("blocks"), std::string::npos);
  registration.resumed = true;
  registration.running = {17, 18};
  registration.blocksReported = true;
  ExecutorRegistration back = executorRegistrationFromJson(parseJson(toJson(registration)));
  EXPECT_TRUE(back.blocksReported) << "holding no block is a report too";
  EXPECT_TRUE(back.blocks.empty());
  registration.blocks = {"job-1/map/0/part-0", "job-1/map/3/part-1"};
  back = executorRegistrationFromJson(parseJson(toJson(registration)));
  EXPECT_TRUE(back.resumed);
  EXPECT_EQ(back.running, (std::vector<int64_t>{17, 18}));
  EXPECT_TRUE(back.blocksReported);
  EXPECT_EQ(back.blocks, registration.blocks);
}

TEST(ExecutorMessagesTest, RegisteredRoundTrips) {
  ExecutorRegistered registered;
  registered.heartbeatIntervalMs = 250;
  registered.taskSlots = 4;
  registered.queuedTaskWaitMs = 50;
  ExecutorRegistered back = executorRegisteredFromJson(parseJson(toJson(registered)));
  EXPECT_EQ(back.heartbeatIntervalMs, 250);
  EXPECT_EQ(back.taskSlots, 4);
  EXPECT_EQ(back.queuedTaskWaitMs, 50);
  EXPECT_EQ(executorRegisteredFromJson(parseJson(R"({"heartbeatIntervalMs":1,"taskSlots":1})"))
                .queuedTaskWaitMs,
            0)
      << "an AM that does not pipeline: no limit";
}

TEST(ExecutorMessagesTest, TaskLaunchRoundTrips) {
  const TaskLaunch launch = sampleLaunch(42);
  expectSame(taskLaunchFromJson(parseJson(toJson(launch))), launch);

  TaskLaunch sleep;
  sleep.taskId = 0;
  sleep.kind = "sleep";
  sleep.sleepMs = 1500;
  expectSame(taskLaunchFromJson(parseJson(toJson(sleep))), sleep);

  TaskLaunch queued = sleep;
  queued.queued = true;
  EXPECT_TRUE(taskLaunchFromJson(parseJson(toJson(queued))).queued);
  EXPECT_EQ(toJson(sleep).find("queued"), std::string::npos) << "written only when set";
}

TEST(ExecutorMessagesTest, TaskStatesAreNamesOnlyOnTheWire) {
  const std::pair<TaskState, const char*> states[] = {{TaskState::kFinished, "FINISHED"},
                                                      {TaskState::kFailed, "FAILED"},
                                                      {TaskState::kKilled, "KILLED"},
                                                      {TaskState::kFetchFailed, "FETCH_FAILED"}};
  for (const auto& [state, name] : states) {
    EXPECT_STREQ(taskStateName(state), name);
    TaskStatusUpdate update = sampleUpdate(3);
    update.state = state;
    update.failedInput = {"job-1/map", 3, "e2", "http://127.0.0.1:1", "job-1/map/3", 10};
    const std::string json = toJson(update);
    EXPECT_NE(json.find(std::string("\"state\":\"") + name + "\""), std::string::npos) << json;
    EXPECT_EQ(taskStatusUpdateFromJson(parseJson(json)).state, state) << name;
  }
}

TEST(ExecutorMessagesTest, TaskStatusUpdateRoundTrips) {
  const TaskStatusUpdate update = sampleUpdate(9);
  expectSame(taskStatusUpdateFromJson(parseJson(toJson(update))), update);
}

TEST(ExecutorMessagesTest, SyncRoundTrips) {
  ExecutorSync sync;
  sync.updates = {sampleUpdate(1), sampleUpdate(2)};
  sync.updates[1].state = rest::TaskState::kKilled;
  sync.running = {3, 4, 5};
  sync.returned = {6};
  sync.freeSlots = 2;
  sync.maxWaitMs = 1000;
  ExecutorSync back = executorSyncFromJson(parseJson(toJson(sync)));
  EXPECT_EQ(back.returned, sync.returned);
  expectSameEach(back.updates, sync.updates);
  EXPECT_EQ(back.running, sync.running);
  EXPECT_EQ(back.freeSlots, 2);
  EXPECT_EQ(back.maxWaitMs, 1000);

  ExecutorSync empty = executorSyncFromJson(parseJson(toJson(ExecutorSync{})));
  EXPECT_TRUE(empty.updates.empty());
  EXPECT_TRUE(empty.running.empty());
}

TEST(ExecutorMessagesTest, SyncReplyRoundTrips) {
  ExecutorSyncReply reply;
  reply.launches = {sampleLaunch(10), sampleLaunch(11)};
  reply.launches[1].kind = "noop";
  reply.launches[1].argv.clear();
  reply.kills = {7, 8};
  reply.takeBack = {9};
  reply.shutdown = true;
  ExecutorSyncReply back = executorSyncReplyFromJson(parseJson(toJson(reply)));
  EXPECT_EQ(back.takeBack, reply.takeBack);
  expectSameEach(back.launches, reply.launches);
  EXPECT_EQ(back.kills, reply.kills);
  EXPECT_TRUE(back.shutdown);
}

// Graceful decommissioning: the AM's migrations for a peer and the peer's results.
TEST(ExecutorMessagesTest, MigrationsAndTheirResultsRoundTrip) {
  ExecutorSyncReply reply;
  reply.migrations = {{3, "e3", "http://127.0.0.1:4000", {"job-1/map/0/part-0"}, ""},
                      {4, "e3", "", {"job-1/map/1/part-0"}, "/shared/fallback/app-1"}};
  const ExecutorSyncReply back = executorSyncReplyFromJson(parseJson(toJson(reply)));
  ASSERT_EQ(back.migrations.size(), 2u);
  EXPECT_EQ(back.migrations[0].fallbackDir, "") << "a peer's migration";
  EXPECT_EQ(back.migrations[1].fallbackDir, "/shared/fallback/app-1") << "a copy to the fallback";
  EXPECT_EQ(back.migrations[0].id, 3);
  EXPECT_EQ(back.migrations[0].fromExecutor, "e3");
  EXPECT_EQ(back.migrations[0].url, "http://127.0.0.1:4000");
  EXPECT_EQ(back.migrations[0].blocks, std::vector<std::string>{"job-1/map/0/part-0"});
  EXPECT_EQ(toJson(ExecutorSyncReply{}).find("migrations"), std::string::npos)
      << "left out when there are none";

  ExecutorSync sync;
  sync.migrated = {{3, true, ""}, {4, false, "HTTP 404"}};
  const ExecutorSync reported = executorSyncFromJson(parseJson(toJson(sync)));
  ASSERT_EQ(reported.migrated.size(), 2u);
  EXPECT_TRUE(reported.migrated[0].ok);
  EXPECT_FALSE(reported.migrated[1].ok);
  EXPECT_EQ(reported.migrated[1].reason, "HTTP 404");
  EXPECT_FALSE(reported.decommissioning);
  EXPECT_EQ(toJson(sync).find("decommissioning"), std::string::npos) << "left out when false";
  sync.decommissioning = true;  // asked to leave (SIGPWR)
  EXPECT_TRUE(executorSyncFromJson(parseJson(toJson(sync))).decommissioning);

  const auto decodeReply = [](const rapidjson::Value& json) { executorSyncReplyFromJson(json); };
  expectFieldError(R"({"migrations":[{"id":1,"fromExecutor":"e3","blocks":["../x/part-0"]}]})",
                   decodeReply, "migrations[0].blocks[0]");
  expectFieldError(
      R"({"migrations":[{"id":1,"fromExecutor":"e3","blocks":[],"fallbackDir":"relative/dir"}]})",
      decodeReply, "migrations[0].fallbackDir");
}

TEST(ExecutorMessagesTest, OptionalFieldsTakeDefaults) {
  TaskLaunch launch = taskLaunchFromJson(parseJson(R"({"taskId":5,"kind":"noop"})"));
  EXPECT_EQ(launch.taskId, 5);
  EXPECT_EQ(launch.attempt, 0);
  EXPECT_EQ(launch.cpus, 1);
  EXPECT_TRUE(launch.argv.empty());
  ExecutorSyncReply reply = executorSyncReplyFromJson(parseJson("{}"));
  EXPECT_TRUE(reply.launches.empty());
  EXPECT_FALSE(reply.shutdown);
}

TEST(ExecutorMessagesTest, ErrorsNameTheFieldInsideArrays) {
  const auto decodeReply = [](const rapidjson::Value& json) { executorSyncReplyFromJson(json); };
  const std::string good = R"({"taskId":1,"kind":"noop"})";
  expectFieldError(R"({"launches":[)" + good + "," + good + R"(,{"taskId":"x","kind":"noop"}]})",
                   decodeReply, "launches[2].taskId");
  expectFieldError(R"({"launches":[{"taskId":1,"kind":"bake"}]})", decodeReply, "launches[0].kind");
  expectFieldError(R"({"launches":[{"taskId":1,"kind":"command"}]})", decodeReply,
                   "launches[0].argv");
  expectFieldError(R"({"launches":[{"taskId":1,"kind":"command","argv":["a",2]}]})", decodeReply,
                   "launches[0].argv[1]");
  expectFieldError(R"({"launches":[{"taskId":1,"kind":"noop","env":{"A":1}}]})", decodeReply,
                   "launches[0].env.A");
  expectFieldError(R"({"launches":[{"taskId":1,"kind":"sleep","sleepMs":-1}]})", decodeReply,
                   "launches[0].sleepMs");
  expectFieldError(R"({"launches":[{"taskId":1,"kind":"noop","cpus":0}]})", decodeReply,
                   "launches[0].cpus");
  expectFieldError(R"({"launches":[{"kind":"noop"}]})", decodeReply, "launches[0].taskId");
  expectFieldError(R"({"kills":[1,"2"]})", decodeReply, "kills[1]");
  expectFieldError(R"({"shutdown":"yes"})", decodeReply, "shutdown");
  expectFieldError(R"({"launches":{}})", decodeReply, "launches");
}

TEST(ExecutorMessagesTest, SyncErrorsNameTheField) {
  const auto decodeSync = [](const rapidjson::Value& json) { executorSyncFromJson(json); };
  expectFieldError(R"({"freeSlots":1,"updates":[{"taskId":1,"state":"DONE"}]})", decodeSync,
                   "updates[0].state");
  expectFieldError(R"({"freeSlots":1,"updates":[{"taskId":1,"state":"FAILED","exitCode":"1"}]})",
                   decodeSync, "updates[0].exitCode");
  expectFieldError(R"({"freeSlots":-1})", decodeSync, "freeSlots");
  expectFieldError(R"({"updates":[]})", decodeSync, "freeSlots");
  expectFieldError(R"({"freeSlots":0,"running":[1,-2]})", decodeSync, "running[1]");
  expectFieldError(R"({"freeSlots":0,"maxWaitMs":1.5})", decodeSync, "maxWaitMs");
}

TEST(ExecutorMessagesTest, RegistrationErrorsNameTheField) {
  const auto decodeRegistration = [](const rapidjson::Value& json) {
    executorRegistrationFromJson(json);
  };
  expectFieldError(R"({"executorId":"","cores":1})", decodeRegistration, "executorId");
  expectFieldError(R"({"executorId":"e1","cores":0})", decodeRegistration, "cores");
  expectFieldError(R"({"executorId":"e1","cores":1,"port":70000})", decodeRegistration, "port");
  const auto decodeRegistered = [](const rapidjson::Value& json) {
    executorRegisteredFromJson(json);
  };
  expectFieldError(R"({"heartbeatIntervalMs":0,"taskSlots":1})", decodeRegistered,
                   "heartbeatIntervalMs");
  expectFieldError(R"({"heartbeatIntervalMs":100})", decodeRegistered, "taskSlots");
}

TEST(ExecutorMessagesTest, NestedDecodersPrefixThePath) {
  rapidjson::Document json = parseJson(R"({"taskId":1})");
  try {
    taskStatusUpdateFromJson(json, "updates[4]");
    FAIL() << "accepted an update without a state";
  } catch (const JsonFieldError& error) {
    EXPECT_EQ(error.fieldPath(), "updates[4].state");
  }
}

TEST(ExecutorDataMessagesTest, InputsBlocksFetchFailuresAndDropsSurviveARoundTrip) {
  TaskLaunch launch;
  launch.taskId = 9;
  launch.kind = "noop";
  BlockInput input;
  input.stageId = "job-1/words";
  input.mapIndex = 3;
  input.executorId = "e2";
  input.url = "http://127.0.0.1:4000";
  input.path = "job-1/words/3/part-1";
  input.size = 77;
  launch.inputs = {input};
  launch.collectDir = "/out";
  launch.speculative = true;
  const TaskLaunch back = taskLaunchFromJson(parseJson(toJson(launch)));
  ASSERT_EQ(back.inputs.size(), 1u);
  EXPECT_EQ(back.inputs[0].stageId, "job-1/words");
  EXPECT_EQ(back.inputs[0].url, "http://127.0.0.1:4000");
  EXPECT_EQ(back.inputs[0].size, 77);
  EXPECT_EQ(back.collectDir, "/out");
  EXPECT_TRUE(back.speculative);

  TaskStatusUpdate update;
  update.taskId = 1;
  update.state = rest::TaskState::kFinished;
  update.blocks = {{0, 10}, {2, 0}};
  const TaskStatusUpdate done = taskStatusUpdateFromJson(parseJson(toJson(update)));
  ASSERT_EQ(done.blocks.size(), 2u);
  EXPECT_EQ(done.blocks[1].partition, 2);
  update.state = rest::TaskState::kFetchFailed;
  update.failedInput = input;
  const TaskStatusUpdate fetch = taskStatusUpdateFromJson(parseJson(toJson(update)));
  EXPECT_EQ(fetch.failedInput.executorId, "e2");
  EXPECT_EQ(fetch.failedInput.mapIndex, 3);

  ExecutorSyncReply reply;
  reply.dropBlocks = {"job-1/map"};
  EXPECT_EQ(executorSyncReplyFromJson(parseJson(toJson(reply))).dropBlocks,
            std::vector<std::string>{"job-1/map"});

  ExecutorRegistration registration;
  registration.executorId = "e1";
  registration.port = 5000;
  registration.node = "node-1";
  EXPECT_EQ(executorRegistrationFromJson(parseJson(toJson(registration))).node, "node-1");
}

TEST(ExecutorDataMessagesTest, BadBlockFieldsAreNamed) {
  const auto launchWith = [](const std::string& inputs) {
    return R"({"taskId": 1, "kind": "noop", "inputs": [)" + inputs + "]}";
  };
  try {
    taskLaunchFromJson(parseJson(launchWith(R"({"stageId": "m", "mapIndex": 0, "path": "../x"})")));
    FAIL();
  } catch (const JsonFieldError& e) {
    EXPECT_NE(std::string(e.what()).find("inputs[0].path"), std::string::npos) << e.what();
  }
  EXPECT_THROW(taskLaunchFromJson(parseJson(launchWith(R"({"stageId": "m", "mapIndex": -1})"))),
               JsonFieldError);
  EXPECT_THROW(taskStatusUpdateFromJson(parseJson(R"({"taskId": 1, "state": "FETCH_FAILED"})")),
               JsonFieldError);
}

}  // namespace
}  // namespace tide::rest
