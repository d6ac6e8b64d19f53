#include "allocation/workload_trace.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "tests/support/errors.h"

namespace tide::allocation {
namespace {

Trace parse(const std::string& text) {
  std::istringstream in(text);
  return parseTrace(in, "trace.jsonl");
}

// The message a bad trace gets, or "" when it parses.
std::string errorOf(const std::string& text) {
  return testing_support::messageOf<TraceError>([&] { parse(text); });
}

const std::string kStage = R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 2, "task_ms": 10})";

TEST(WorkloadTraceTest, ParsesEveryEventType) {
  const Trace trace = parse(
      R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 100, "task_ms": 2000, "job": "j1", "shuffle": true}

{"t": 5, "type": "stage", "stage": "s2", "tasks": [2000, 1500, 10], "cache": true}
{"t": 9000, "type": "uncache", "stage": "s2"}
{"t": 9000, "type": "job_end", "job": "j1"}
{"t": 9500, "type": "set_bounds", "max": 10}
{"t": 9900, "type": "executor_lost"}
)");
  ASSERT_EQ(trace.events.size(), 6u);
  const TraceEvent& s1 = trace.events[0];
  EXPECT_EQ(s1.type, TraceEvent::Type::kStage);
  EXPECT_EQ(s1.stage, "s1");
  EXPECT_EQ(s1.job, "j1");
  EXPECT_EQ(s1.taskCount, 100);
  EXPECT_TRUE(s1.taskDurations.empty());  // a count keeps one duration, not a hundred
  EXPECT_EQ(s1.taskDuration(99), 2000);
  EXPECT_TRUE(s1.shuffle);
  EXPECT_FALSE(s1.cache);
  const TraceEvent& s2 = trace.events[1];
  EXPECT_EQ(s2.line, 3);  // blank lines count
  EXPECT_EQ(s2.taskCount, 3);
  EXPECT_EQ(s2.taskDuration(1), 1500);
  EXPECT_TRUE(s2.cache);
  EXPECT_EQ(trace.events[2].type, TraceEvent::Type::kUncache);
  EXPECT_EQ(trace.events[3].type, TraceEvent::Type::kJobEnd);
  const TraceEvent& bounds = trace.events[4];
  EXPECT_EQ(bounds.type, TraceEvent::Type::kSetBounds);
  EXPECT_FALSE(bounds.minExecutors.has_value());
  EXPECT_EQ(bounds.maxExecutors, 10);
  EXPECT_EQ(trace.events[5].type, TraceEvent::Type::kExecutorLost);
  EXPECT_EQ(trace.events[5].t, 9900);
}

TEST(WorkloadTraceTest, ErrorsNameTheLineAndTheField) {
  EXPECT_EQ(errorOf(kStage + "\n" + R"({"t": 1, "type": "stage", "stage": "s2", "tasks": "many"})"),
            "trace.jsonl:2: field 'tasks': expected an integer or an array of durations");
  EXPECT_EQ(errorOf(R"({"t": 0, "type": "stage", "stage": "s1", "task_ms": 10})"),
            "trace.jsonl:1: field 'tasks': missing");
  EXPECT_EQ(errorOf(R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 3})"),
            "trace.jsonl:1: field 'task_ms': missing (needed when 'tasks' is a count)");
  EXPECT_EQ(errorOf(R"({"t": 0, "type": "stage", "stage": "s1", "tasks": [10, 0]})"),
            "trace.jsonl:1: field 'tasks[1]': expected a positive integer (milliseconds)");
  EXPECT_EQ(errorOf(R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 0, "task_ms": 1})"),
            "trace.jsonl:1: field 'tasks': expected a positive number of tasks");
  EXPECT_EQ(errorOf(R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 1, "task-ms": 1})"),
            "trace.jsonl:1: field 'task-ms': not a field of a 'stage' event");
  EXPECT_EQ(
      errorOf(
          R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 1, "task_ms": 1, "cache": "yes"})"),
      "trace.jsonl:1: field 'cache': expected true or false");
  EXPECT_EQ(
      errorOf(
          R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 1, "task_ms": 1, "shuffle": true})"),
      "trace.jsonl:1: field 'job': missing (needed when 'shuffle' is true)");
  EXPECT_EQ(errorOf(R"({"type": "executor_lost"})"), "trace.jsonl:1: field 't': missing");
  EXPECT_EQ(errorOf(R"({"t": -5, "type": "executor_lost"})"),
            "trace.jsonl:1: field 't': expected a non-negative integer (milliseconds)");
  EXPECT_EQ(errorOf(R"({"t": 1.5, "type": "executor_lost"})"),
            "trace.jsonl:1: field 't': expected a non-negative integer (milliseconds)");
  EXPECT_EQ(errorOf(R"({"t": 0, "type": "explode"})"),
            "trace.jsonl:1: field 'type': unknown event type 'explode' (one of stage, uncache, "
            "job_end, set_bounds, executor_lost)");
  EXPECT_EQ(errorOf(R"({"t": 0, "type": "set_bounds"})"),
            "trace.jsonl:1: a 'set_bounds' event needs at least one of 'min', 'initial', 'max'");
  EXPECT_EQ(errorOf(R"({"t": 0, "type": "set_bounds", "max": -1})"),
            "trace.jsonl:1: field 'max': expected a non-negative integer");
  EXPECT_EQ(errorOf(R"([1, 2])"), "trace.jsonl:1: expected a JSON object");
}

// A stage's cores per task (issue 13 item 5): optional, positive; 0 stands for task.cpus.
TEST(WorkloadTraceTest, AStagesCpusPerTask) {
  const Trace trace =
      parse(R"({"t": 0, "type": "stage", "stage": "w", "tasks": 2, "task_ms": 10, "cpus": 4})"
            "\n" +
            kStage);
  ASSERT_EQ(trace.events.size(), 2u);
  EXPECT_EQ(trace.events[0].cpus, 4);
  EXPECT_EQ(trace.events[1].cpus, 0) << "not given: task.cpus";
  EXPECT_EQ(
      errorOf(R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 1, "task_ms": 1, "cpus": 0})"),
      "trace.jsonl:1: field 'cpus': expected a positive number of cores per task");
  EXPECT_EQ(
      errorOf(R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 1, "task_ms": 1, "cpus": "2"})"),
      "trace.jsonl:1: field 'cpus': expected a non-negative integer");
}

// A straggler is slow on its first attempt only: later attempts take the task's own time.
TEST(WorkloadTraceTest, StragglersSlowOnlyTheFirstAttemptOfTheirTask) {
  const Trace trace = parse(
      R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 4, "task_ms": 1000, "stragglers": [{"task": 3, "ms": 20000}]})");
  const TraceEvent& stage = trace.events[0];
  EXPECT_EQ(stage.firstAttemptDuration(3), 20000);
  EXPECT_EQ(stage.taskDuration(3), 1000);
  EXPECT_EQ(stage.firstAttemptDuration(2), 1000);

  const std::string head =
      R"({"t": 0, "type": "stage", "stage": "s1", "tasks": 4, "task_ms": 1000, )";
  EXPECT_EQ(errorOf(head + R"("stragglers": [{"task": 4, "ms": 20}]})"),
            "trace.jsonl:1: field 'stragglers[0].task': expected a task index from 0 to 3");
  EXPECT_EQ(errorOf(head + R"("stragglers": [{"task": 1, "ms": 20}, {"task": 1, "ms": 30}]})"),
            "trace.jsonl:1: field 'stragglers[1].task': task 1 is listed twice");
  EXPECT_EQ(errorOf(head + R"("stragglers": [{"task": 1, "ms": 0}]})"),
            "trace.jsonl:1: field 'stragglers[0].ms': expected a positive integer (milliseconds)");
  EXPECT_EQ(errorOf(head + R"("stragglers": [{"task": 1, "msec": 10}]})"),
            "trace.jsonl:1: field 'stragglers[0]': unknown field 'msec'");
  EXPECT_EQ(errorOf(head + R"("stragglers": {"task": 1}})"),
            "trace.jsonl:1: field 'stragglers': expected an array of {\"task\": INDEX, \"ms\": "
            "DURATION}");
}

TEST(WorkloadTraceTest, BadJsonNamesTheLineAndColumn) {
  const std::string message = errorOf(kStage + "\n\n" + R"({"t": 3, "type": "executor_lost",})");
  EXPECT_EQ(message.rfind("trace.jsonl:3: invalid JSON at column ", 0), 0u) << message;
}

TEST(WorkloadTraceTest, ErrorsAgainstEarlierLines) {
  EXPECT_EQ(errorOf(R"({"t": 1000, "type": "executor_lost"}
{"t": 500, "type": "executor_lost"})"),
            "trace.jsonl:2: field 't': 500 is earlier than the previous event's t=1000");
  EXPECT_EQ(errorOf(kStage + "\n" + kStage),
            "trace.jsonl:2: field 'stage': stage 's1' was already submitted on line 1");
  EXPECT_EQ(errorOf(kStage + "\n" + R"({"t": 0, "type": "uncache", "stage": "s9"})"),
            "trace.jsonl:2: field 'stage': unknown stage 's9' (no earlier line submits it)");
  EXPECT_EQ(errorOf(kStage + "\n" + R"({"t": 0, "type": "job_end", "job": "j1"})"),
            "trace.jsonl:2: field 'job': unknown job 'j1' (no earlier stage names it)");
  const std::string withJob =
      R"({"t": 0, "type": "stage", "stage": "m", "tasks": 1, "task_ms": 1, "job": "j1"}
{"t": 5, "type": "job_end", "job": "j1"})";
  EXPECT_EQ(errorOf(withJob + "\n" + R"({"t": 6, "type": "job_end", "job": "j1"})"),
            "trace.jsonl:3: field 'job': job 'j1' already ended on line 2");
  EXPECT_EQ(
      errorOf(withJob + "\n" +
              R"({"t": 6, "type": "stage", "stage": "r", "tasks": 1, "task_ms": 1, "job": "j1"})"),
      "trace.jsonl:3: field 'job': job 'j1' already ended on line 2");
}

TEST(WorkloadTraceTest, EqualTimesAndBlankLinesAreFine) {
  EXPECT_EQ(errorOf(kStage + "\n   \n\r\n" + R"({"t": 0, "type": "executor_lost"})" + "\r\n"), "");
}

TEST(WorkloadTraceTest, MissingFileIsATraceError) {
  EXPECT_THROW(loadTrace("/nonexistent/trace.jsonl"), TraceError);
}

}  // namespace
}  // namespace tide::allocation
