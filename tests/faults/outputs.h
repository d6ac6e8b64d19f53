#pragma once

// Exactly-once, as the fault suite checks it: a job whose tasks each write one line
// "task <i> attempt <a>" into $TIDE_OUTPUT_DIR/part-0 must leave in its `output` directory
// exactly the files part-<i> of the tasks that succeeded, each holding that one line of its own
// task from one attempt: no file missing, none extra (a temporary or a second copy), none
// half-written or written by two attempts.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace tide::faults {

// The line a task of the suite's jobs writes (a shell fragment, in a job's JSON string).
inline std::string writeOutputFragment() {
  return R"(echo task {task} attempt {attempt} > \"$TIDE_OUTPUT_DIR/part-0\")";
}

// Checks `output` against the tasks `expected` (all that must be there, and nothing else);
// reports each problem as a test failure and returns how many there were. `attempts` gets the
// attempt that wrote each task's file.
inline int outputProblems(const std::filesystem::path& output, const std::set<int>& expected,
                          std::map<int, int>* attempts = nullptr) {
  namespace fs = std::filesystem;
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(output, ec)) {
    names.insert(entry.path().filename().string());
  }
  int wrong = 0;
  if (ec && !expected.empty()) {
    ADD_FAILURE() << "cannot list " << output << ": " << ec.message();
    return static_cast<int>(expected.size());
  }
  for (int i : expected) {
    const std::string name = "part-" + std::to_string(i);
    if (names.erase(name) == 0) {
      ADD_FAILURE() << name << " is missing from " << output;
      ++wrong;
      continue;
    }
    std::ifstream in(output / name);
    std::stringstream text;
    text << in.rdbuf();
    const std::string content = text.str();
    std::istringstream words(content);
    std::string word, taskWord, extra;
    int task = -1, attempt = -1;
    words >> word >> task >> taskWord >> attempt;
    const bool more = static_cast<bool>(words >> extra);
    if (word != "task" || task != i || taskWord != "attempt" || attempt < 0 || more ||
        std::count(content.begin(), content.end(), '\n') != 1) {
      ADD_FAILURE() << name << " does not hold exactly one line of task " << i << ": " << content;
      ++wrong;
    }
    if (attempts != nullptr) (*attempts)[i] = attempt;
  }
  for (const std::string& extraName : names) {
    ADD_FAILURE() << "unexpected file in " << output << ": " << extraName;
    ++wrong;
  }
  return wrong;
}

inline std::set<int> firstTasks(int n) {
  std::set<int> tasks;
  for (int i = 0; i < n; ++i) tasks.insert(i);
  return tasks;
}

}  // namespace tide::faults
