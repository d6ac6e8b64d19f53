// Job files: the happy path, and every malformed case rejected with the field named.

#include "am/scheduler/job.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "tests/support/errors.h"
#include "tests/support/temp_dir.h"

namespace tide::am {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr const char* kThumbnails = R"({"name": "thumbnails",
 "pool": "batch", "output": "out/",
 "stages": [
   {"id": "resize", "tasks": 200, "command": ["sh", "-c", "convert in/{task}.png -resize 50% out/{task}.png"],
    "env": {"MAGICK_THREAD_LIMIT": "1"}, "cwd": "/data", "cpus": 2, "timeout": "30s", "persist": true},
   {"id": "index", "depends_on": ["resize"], "tasks": 1, "command": ["sh", "-c", "ls out > index.txt"],
    "timeout": 1500},
   {"id": "wait", "depends_on": ["index"], "tasks": 3, "builtin": "sleep", "sleep_ms": 250},
   {"id": "done", "depends_on": ["wait", "index"], "tasks": 1, "builtin": "noop"}]})";

// The message of the JobError that parsing `json` throws, or "" when it parses.
std::string parseError(const std::string& json) {
  return testing_support::messageOf<JobError>([&] { parseJob(json); });
}

// A job with one stage whose fields are `stageFields` (JSON members without braces).
std::string oneStage(const std::string& stageFields) {
  return R"({"name": "j", "stages": [{)" + stageFields + "}]}";
}

TEST(JobParseTest, ReadsEveryField) {
  const Job job = parseJob(kThumbnails);
  EXPECT_EQ(job.name, "thumbnails");
  EXPECT_EQ(job.pool, "batch");
  EXPECT_EQ(job.output, "out/");
  ASSERT_EQ(job.stages.size(), 4u);

  const StageSpec& resize = job.stages[0];
  EXPECT_EQ(resize.id, "resize");
  EXPECT_TRUE(resize.dependsOn.empty());
  EXPECT_EQ(resize.numTasks, 200);
  EXPECT_EQ(resize.kind, TaskKind::kCommand);
  EXPECT_EQ(resize.command, (std::vector<std::string>{
                                "sh", "-c", "convert in/{task}.png -resize 50% out/{task}.png"}));
  EXPECT_EQ(resize.env.at("MAGICK_THREAD_LIMIT"), "1");
  EXPECT_EQ(resize.cwd, "/data");
  EXPECT_EQ(resize.cpus, 2);
  EXPECT_EQ(resize.timeoutMs, 30000);
  EXPECT_TRUE(resize.persist);

  const StageSpec& index = job.stages[1];
  EXPECT_EQ(index.dependsOn, std::vector<std::string>{"resize"});
  EXPECT_EQ(index.timeoutMs, 1500);
  EXPECT_FALSE(index.cpus.has_value());
  EXPECT_FALSE(index.persist);

  EXPECT_EQ(job.stages[2].kind, TaskKind::kSleep);
  EXPECT_EQ(job.stages[2].sleepMs, 250);
  EXPECT_EQ(job.stages[3].kind, TaskKind::kNoop);
  EXPECT_EQ(job.stages[3].dependsOn, (std::vector<std::string>{"wait", "index"}));
}

TEST(JobParseTest, NameDefaultsAndInfiniteTimeoutMeansNone) {
  const Job job = parseJob(R"({"stages": [{"id": "a", "tasks": 1, "builtin": "noop",
                                           "timeout": "infinity"}]})");
  EXPECT_EQ(job.name, "job");
  EXPECT_EQ(job.stages[0].timeoutMs, 0);
}

TEST(JobParseTest, MalformedJsonNamesLineAndColumn) {
  EXPECT_THAT(parseError("{\"stages\": [\n  {\"id\": \"a\",, }]}"),
              StartsWith("malformed JSON at line 2, column"));
}

TEST(JobParseTest, TopLevelProblemsNameTheField) {
  EXPECT_EQ(parseError("[]"), "expected a job object with \"stages\", got an array");
  EXPECT_THAT(parseError(R"({"name": "j"})"), StartsWith("stages: missing"));
  EXPECT_EQ(parseError(R"({"stages": []})"), "stages: expected at least one stage");
  EXPECT_THAT(parseError(R"({"stages": {}})"), StartsWith("stages: expected an array"));
  EXPECT_EQ(parseError(R"({"name": 3, "stages": []})"), "name: expected a string, got an integer");
  EXPECT_EQ(parseError(R"({"nmae": "j", "stages": []})"),
            "nmae: unknown field (did you mean 'name'?)");
  EXPECT_EQ(parseError(R"({"stages": [3]})"), "stages[0]: expected an object, got an integer");
}

TEST(JobParseTest, UnknownStageFieldSuggestsTheNearestOne) {
  EXPECT_EQ(parseError(R"({"stages": [{"id": "a", "tasks": 1, "builtin": "noop"},
                                      {"id": "b", "tasks": 1, "comand": ["true"]}]})"),
            "stages[1].comand: unknown field (did you mean 'command'?)");
  EXPECT_EQ(parseError(oneStage(R"("id": "a", "tasks": 1, "builtin": "noop", "zzzzzzzz": 1)")),
            "stages[0].zzzzzzzz: unknown field");
}

TEST(JobParseTest, TasksMustBeAPositiveIntegerUpToABillion) {
  const std::string before = R"({"stages": [{"id": "a", "tasks": 1, "builtin": "noop"},
                                            {"id": "b", "builtin": "noop", "tasks": )";
  EXPECT_THAT(parseError(before + "0}]}"),
              StartsWith("stages[1].tasks: expected a positive integer"));
  EXPECT_THAT(parseError(before + "-5}]}"),
              StartsWith("stages[1].tasks: expected a positive integer"));
  EXPECT_THAT(parseError(before + "2.5}]}"),
              StartsWith("stages[1].tasks: expected a positive integer"));
  EXPECT_THAT(parseError(before + "\"7\"}]}"),
              StartsWith("stages[1].tasks: expected a positive integer"));
  EXPECT_EQ(parseError(before + "1000000001}]}"),
            "stages[1].tasks: at most 1000000000 tasks, got 1000000001");
  EXPECT_THAT(parseError(before + "18446744073709551615}]}"),
              StartsWith("stages[1].tasks: at most 1000000000 tasks"));
  EXPECT_EQ(parseError(before + "1000000000}]}"), "");
  EXPECT_THAT(parseError(oneStage(R"("id": "a", "builtin": "noop")")),
              StartsWith("stages[0].tasks: missing"));
}

TEST(JobParseTest, StageIdsMustBePresentWellFormedAndUnique) {
  EXPECT_THAT(parseError(oneStage(R"("tasks": 1, "builtin": "noop")")),
              StartsWith("stages[0].id: missing"));
  EXPECT_EQ(parseError(oneStage(R"("id": "", "tasks": 1, "builtin": "noop")")),
            "stages[0].id: must not be empty");
  EXPECT_THAT(parseError(oneStage(R"("id": "a/b", "tasks": 1, "builtin": "noop")")),
              StartsWith("stages[0].id: 'a/b' may only contain"));
  EXPECT_EQ(parseError(R"({"stages": [{"id": "a", "tasks": 1, "builtin": "noop"},
                                      {"id": "b", "tasks": 1, "builtin": "noop"},
                                      {"id": "a", "tasks": 1, "builtin": "noop"}]})"),
            "stages[2].id: duplicate stage id 'a' (also stages[0])");
}

TEST(JobParseTest, DependenciesMustNameKnownStages) {
  EXPECT_EQ(parseError(R"({"stages": [{"id": "resize", "tasks": 1, "builtin": "noop"},
              {"id": "index", "tasks": 1, "builtin": "noop", "depends_on": ["resize", "resiz"]}]})"),
            "stages[1].depends_on[1]: unknown stage 'resiz' (did you mean 'resize'?)");
  EXPECT_EQ(parseError(oneStage(R"("id": "a", "tasks": 1, "builtin": "noop", "depends_on": "b")")),
            "stages[0].depends_on: expected an array of stage ids, got a string");
  EXPECT_EQ(parseError(oneStage(R"("id": "a", "tasks": 1, "builtin": "noop", "depends_on": [1])")),
            "stages[0].depends_on[0]: expected a string, got an integer");
}

TEST(JobParseTest, DependencyCyclesAreNamed) {
  EXPECT_EQ(parseError(R"({"stages": [
              {"id": "a", "tasks": 1, "builtin": "noop", "depends_on": ["c"]},
              {"id": "b", "tasks": 1, "builtin": "noop", "depends_on": ["a"]},
              {"id": "c", "tasks": 1, "builtin": "noop", "depends_on": ["b"]}]})"),
            "stages[1].depends_on: dependency cycle: a -> c -> b -> a");
  EXPECT_EQ(
      parseError(oneStage(R"("id": "a", "tasks": 1, "builtin": "noop", "depends_on": ["a"])")),
      "stages[0].depends_on: dependency cycle: a -> a");
}

TEST(JobParseTest, ExactlyOneOfCommandAndBuiltin) {
  EXPECT_EQ(parseError(oneStage(R"("id": "a", "tasks": 1)")),
            "stages[0].command: missing (give \"command\" or \"builtin\")");
  EXPECT_EQ(
      parseError(oneStage(R"("id": "a", "tasks": 1, "command": ["true"], "builtin": "noop")")),
      "stages[0]: give either \"command\" or \"builtin\", not both");
  EXPECT_THAT(parseError(oneStage(R"("id": "a", "tasks": 1, "command": [])")),
              StartsWith("stages[0].command: must not be empty"));
  EXPECT_EQ(parseError(oneStage(R"("id": "a", "tasks": 1, "command": [""])")),
            "stages[0].command[0]: the program must not be empty");
  EXPECT_THAT(parseError(oneStage(R"("id": "a", "tasks": 1, "command": "ls -l")")),
              StartsWith("stages[0].command: expected an argv array"));
  EXPECT_EQ(parseError(oneStage(R"("id": "a", "tasks": 1, "command": ["ls", 3])")),
            "stages[0].command[1]: expected a string, got an integer");
  EXPECT_EQ(parseError(oneStage(R"("id": "a", "tasks": 1, "builtin": "nop")")),
            "stages[0].builtin: unknown builtin 'nop' (expected 'noop' or 'sleep')");
  EXPECT_THAT(parseError(oneStage(R"("id": "a", "tasks": 1, "builtin": "sleep")")),
              StartsWith("stages[0].sleep_ms: missing"));
  EXPECT_THAT(parseError(oneStage(R"("id": "a", "tasks": 1, "builtin": "sleep", "sleep_ms": -1)")),
              StartsWith("stages[0].sleep_ms: expected a non-negative integer"));
  EXPECT_THAT(parseError(oneStage(R"("id": "a", "tasks": 1, "builtin": "noop", "sleep_ms": 5)")),
              StartsWith("stages[0].sleep_ms: only used with"));
}

TEST(JobParseTest, OptionalFieldsAreTypeChecked) {
  const std::string stage = R"("id": "a", "tasks": 1, "builtin": "noop", )";
  EXPECT_EQ(parseError(oneStage(stage + R"("env": {"A": 1})")),
            "stages[0].env.A: expected a string, got an integer");
  EXPECT_EQ(parseError(oneStage(stage + R"("env": ["A"])")),
            "stages[0].env: expected an object of strings, got an array");
  EXPECT_EQ(parseError(oneStage(stage + R"("cwd": false)")),
            "stages[0].cwd: expected a string, got a boolean");
  EXPECT_EQ(parseError(oneStage(stage + R"("cpus": 0)")),
            "stages[0].cpus: expected a positive integer, got 0");
  EXPECT_THAT(parseError(oneStage(stage + R"("timeout": "30 parsecs")")),
              StartsWith("stages[0].timeout: expected a duration"));
  EXPECT_THAT(parseError(oneStage(stage + R"("timeout": -3)")),
              StartsWith("stages[0].timeout: expected a duration"));
  EXPECT_EQ(parseError(oneStage(stage + R"("persist": "yes")")),
            "stages[0].persist: expected a boolean, got a string");
}

TEST(JobFileTest, LoadsAFileAndDefaultsTheNameToItsStem) {
  testing_support::TempDir dir;
  const std::string path =
      dir.writeFile("nightly.json", R"({"stages": [{"id": "a", "tasks": 2, "builtin": "noop"}]})");
  const Job job = loadJobFile(path);
  EXPECT_EQ(job.name, "nightly");
  EXPECT_EQ(job.stages[0].numTasks, 2);
}

TEST(JobFileTest, ErrorsStartWithTheFilePath) {
  testing_support::TempDir dir;
  const std::string path =
      dir.writeFile("bad.json", R"({"stages": [{"id": "a", "tasks": 0, "builtin": "noop"}]})");
  try {
    loadJobFile(path);
    FAIL() << "expected a JobError";
  } catch (const JobError& e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": stages[0].tasks: expected a positive integer, got 0");
  }
  const std::string missing = (dir.path() / "missing.json").string();
  try {
    loadJobFile(missing);
    FAIL() << "expected a JobError";
  } catch (const JobError& e) {
    EXPECT_THAT(e.what(), StartsWith(missing + ": cannot read"));
  }
}

TEST(JobCheckTest, JobsBuiltInCodeAreCheckedToo) {
  Job job;
  job.name = "code";
  StageSpec stage;
  stage.id = "a";
  stage.numTasks = 1;
  job.stages.push_back(stage);  // a command stage without a command
  try {
    checkJob(job);
    FAIL() << "expected a JobError";
  } catch (const JobError& e) {
    EXPECT_THAT(e.what(), StartsWith("stages[0].command: must not be empty"));
  }
}

TEST(PlaceholderTest, SubstitutesTaskStageAndAttemptOnly) {
  EXPECT_EQ(substituteTaskPlaceholders("in/{task}.png-{stage}-{attempt}-{task}", "resize", 17, 2),
            "in/17.png-resize-2-17");
  EXPECT_EQ(substituteTaskPlaceholders("awk '{print $1}' ${HOME} {tasks} {", "s", 1, 0),
            "awk '{print $1}' ${HOME} {tasks} {");
}

TEST(JobDataFieldsTest, PersistPreferredHostsUnpersistAndEarlierJobsStages) {
  const Job job = parseJob(R"({"unpersist": ["job-1/words"], "stages": [
      {"id": "a", "tasks": 2, "persist": true, "preferred_hosts": ["n1", "n2"], "builtin": "noop"},
      {"id": "b", "tasks": 1, "depends_on": ["a", "job-1/words"], "builtin": "noop"}]})");
  EXPECT_TRUE(job.stages[0].persist);
  EXPECT_EQ(job.stages[0].preferredHosts, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(job.unpersist, (std::vector<std::string>{"job-1/words"}));
  EXPECT_TRUE(isPersistedStageReference("job-1/words"));
  EXPECT_FALSE(isPersistedStageReference("words"));
  EXPECT_FALSE(isPersistedStageReference("a/b/c"));
  EXPECT_FALSE(isPersistedStageReference("/words"));
  try {
    parseJob(R"({"unpersist": ["words"], "stages": [{"id": "a", "tasks": 1, "builtin": "noop"}]})");
    FAIL();
  } catch (const JobError& e) {
    EXPECT_THAT(e.what(), StartsWith("unpersist[0]"));
  }
}

TEST(JobDataFieldsTest, JobDirAndRelativeOutputAreTheJobFilesDirectory) {
  testing_support::TempDir dir;
  const std::string path = dir.writeFile("wc.json", R"({"output": "out", "stages": [
      {"id": "a", "tasks": 1, "command": ["sh", "{jobdir}/map.sh"], "env": {"IN": "{jobdir}/in"}}]})");
  const Job job = loadJobFile(path);
  const std::string jobDir = std::filesystem::absolute(dir.path()).string();
  EXPECT_EQ(job.output, jobDir + "/out");
  EXPECT_EQ(job.stages[0].command[1], jobDir + "/map.sh");
  EXPECT_EQ(job.stages[0].env.at("IN"), jobDir + "/in");
}

// A stage's own executor shape (stage-level ResourceProfile): cores and memory, either or both.
TEST(JobParseTest, ReadsAStagesExecutorShapeAndWritesItBack) {
  const Job job = parseJob(oneStage(
      R"("id": "a", "tasks": 1, "builtin": "noop", "executor": {"cores": 8, "memory": "4g"})"));
  ASSERT_TRUE(job.stages[0].executor);
  EXPECT_EQ(job.stages[0].executor->cores, 8);
  EXPECT_EQ(job.stages[0].executor->memoryMb, 4096);
  const Job again = parseJob(jobToJson(job));
  ASSERT_TRUE(again.stages[0].executor);
  EXPECT_EQ(again.stages[0].executor->cores, 8);
  EXPECT_EQ(again.stages[0].executor->memoryMb, 4096);
  const Job memoryOnly = parseJob(
      oneStage(R"("id": "a", "tasks": 1, "builtin": "noop", "executor": {"memory": 512})"));
  EXPECT_FALSE(memoryOnly.stages[0].executor->cores);
  EXPECT_EQ(memoryOnly.stages[0].executor->memoryMb, 512);
  EXPECT_FALSE(
      parseJob(oneStage(R"("id": "a", "tasks": 1, "builtin": "noop")")).stages[0].executor);
}

TEST(JobParseTest, ABadExecutorShapeNamesTheField) {
  const auto stage = [](const std::string& executor) {
    return oneStage(R"("id": "a", "tasks": 1, "builtin": "noop", "executor": )" + executor);
  };
  EXPECT_EQ(parseError(stage(R"({"cores": 0})")),
            "stages[0].executor.cores: expected a positive integer, got 0");
  EXPECT_EQ(parseError(stage(R"({"cores": "8"})")),
            "stages[0].executor.cores: expected a positive integer, got a string");
  EXPECT_THAT(parseError(stage(R"({"memory": "lots"})")),
              StartsWith("stages[0].executor.memory: expected a size such as \"4g\""));
  EXPECT_EQ(parseError(stage(R"({"memory": 0})")), "stages[0].executor.memory: at least 1m");
  EXPECT_EQ(parseError(stage(R"({"cores": 2, "memroy": "1g"})")),
            "stages[0].executor.memroy: unknown field (did you mean 'memory'?)");
  EXPECT_EQ(parseError(stage("{}")), "stages[0].executor: give \"cores\", \"memory\" or both");
  EXPECT_THAT(parseError(stage("4")), StartsWith("stages[0].executor: expected an object"));
}

}  // namespace
}  // namespace tide::am
