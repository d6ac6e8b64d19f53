#include "am/recovery/journal_compaction.h"

#include <climits>
#include <iterator>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace tide::am {
namespace {

using Kind = JournalRecord::Kind;

// Disjoint ranges [first, last] of task indices, merged as the gaps between them fill: a
// stage's commits arrive roughly in index order, so there are few whatever the stage's size.
class IndexRanges {
 public:
  // Whether any index of [first, last] is there.
  bool overlaps(int64_t first, int64_t last) const {
    auto next = ranges_.upper_bound(last);
    return next != ranges_.begin() && std::prev(next)->second >= first;
  }
  // [first, last], which must not overlap what is there.
  void insert(int64_t first, int64_t last) {
    auto next = ranges_.upper_bound(last);
    if (next != ranges_.begin() && std::prev(next)->second + 1 == first) {
      first = std::prev(next)->first;
      ranges_.erase(std::prev(next));
    }
    if (next != ranges_.end() && next->first == last + 1) {
      last = next->second;
      next = ranges_.erase(next);
    }
    ranges_.emplace_hint(next, first, last);
  }
  std::vector<std::pair<int64_t, int64_t>> ranges() const {
    return {ranges_.begin(), ranges_.end()};
  }

 private:
  std::map<int64_t, int64_t> ranges_;  // first -> last
};

// One stage's folded commits.
struct Fold {
  size_t firstRecord = 0;  // where the fold is written: the place of the first commit folded
  JournalRecord record;    // kind, job, stage, highest task id
  IndexRanges indices;
  std::vector<CommitShare> shares;
  std::unordered_map<std::string, size_t> shareOf;  // executor -> its place in shares
  std::map<int64_t, int64_t> durations;             // ms -> how many

  void addShare(const std::string& executorId, const std::string& node, int64_t count) {
    auto [it, added] = shareOf.emplace(executorId, shares.size());
    if (added) shares.push_back({executorId, node, 0});
    CommitShare& share = shares[it->second];
    if (share.node.empty()) share.node = node;
    share.count += count;
  }
  JournalRecord finished() const {
    JournalRecord r = record;
    r.indexRanges = indices.ranges();
    r.shares = shares;
    r.durations.assign(durations.begin(), durations.end());
    return r;
  }
};

bool foldable(const JournalRecord& r) {
  return (r.kind == Kind::kCommit && r.attempt == 0 && r.blocks.empty()) ||
         r.kind == Kind::kCommits;
}

std::string stageKey(const JournalRecord& r) {
  return r.jobId + '\n' + r.stageId;  // '\n' is in no id: they are JSON strings on one line
}

// The first pass: what each stage's commits fold into, each executor's merged record, the
// launches that never committed.
struct Plan {
  // What the second pass does with each record, by its place: the second pass does not decode.
  enum Action : uint8_t { kVerbatim, kSkip, kFoldHere, kExecutorHere, kLaunch };
  std::vector<uint8_t> actions;  // one byte a record: a hundredth of the text at most
  std::unordered_map<size_t, std::string> foldAt;      // kFoldHere -> the stage's key
  std::unordered_map<size_t, std::string> executorAt;  // kExecutorHere -> the executor
  std::map<std::string, Fold> folds;
  std::unordered_map<std::string, std::pair<size_t, JournalRecord>> executors;
  std::unordered_set<int64_t> unfinishedLaunches;
  size_t records = 0;
  int64_t commitsFolded = 0;

  void add(const JournalRecord& r) {
    const size_t at = records++;
    actions.push_back(decide(r, at));
  }

  uint8_t decide(const JournalRecord& r, size_t at) {
    if (r.kind == Kind::kLaunch) return kLaunch;
    if (r.kind == Kind::kExecutor) {
      auto [it, added] = executors.emplace(r.executorId, std::make_pair(at, r));
      if (added) {
        executorAt.emplace(at, r.executorId);
        return kExecutorHere;
      }
      {
        JournalRecord& known = it->second.second;
        known.containerId = r.containerId;
        if (!r.node.empty()) known.node = r.node;
        if (!r.url.empty()) known.url = r.url;
      }
      return kSkip;
    }
    if (!foldable(r)) return kVerbatim;
    auto [it, added] = folds.try_emplace(stageKey(r));
    Fold& fold = it->second;
    if (added) {
      fold.firstRecord = at;
      fold.record.kind = Kind::kCommits;
      fold.record.jobId = r.jobId;
      fold.record.stageId = r.stageId;
    }
    const std::vector<std::pair<int64_t, int64_t>> ranges =
        r.kind == Kind::kCommits ? r.indexRanges
                                 : std::vector<std::pair<int64_t, int64_t>>{{r.index, r.index}};
    // An index committed twice (never so in a journal tide wrote) keeps its record as it is.
    for (const auto& [first, last] : ranges) {
      if (fold.indices.overlaps(first, last)) {
        if (added) folds.erase(it);
        return kVerbatim;
      }
    }
    for (const auto& [first, last] : ranges) fold.indices.insert(first, last);
    fold.record.taskId = std::max(fold.record.taskId, r.taskId);
    if (r.kind == Kind::kCommits) {
      for (const CommitShare& share : r.shares)
        fold.addShare(share.executorId, share.node, share.count);
      for (const auto& [ms, count] : r.durations) fold.durations[ms] += count;
      commitsFolded += r.foldedCommits();
    } else {
      fold.addShare(r.executorId, r.node, 1);
      ++fold.durations[r.durationMs];
      ++commitsFolded;
    }
    if (!added) return kSkip;
    foldAt.emplace(at, it->first);
    return kFoldHere;
  }
};

// A launch record's task id: the AM writes `{"t":"launch","task":N,...`; any other spelling is
// decoded.
int64_t launchedTaskId(std::string_view line) {
  constexpr std::string_view kPrefix = R"({"t":"launch","task":)";
  if (line.substr(0, kPrefix.size()) == kPrefix) {
    int64_t id = 0;
    size_t i = kPrefix.size();
    bool digits = false;
    while (i < line.size() && line[i] >= '0' && line[i] <= '9' && id < (INT64_MAX - 9) / 10) {
      id = id * 10 + (line[i++] - '0');
      digits = true;
    }
    if (digits && i < line.size() && line[i] == ',') return id;
  }
  return decodeJournalRecord(line).taskId;
}

}  // namespace

JournalCompaction compactJournal(std::string_view text, const std::string& source,
                                 const std::function<void(std::string_view)>& write,
                                 const std::function<void(std::string_view line)>& readLine) {
  Plan plan;
  JournalSummarizer summarizer;
  decodeJournalLines(text, source, [&](std::string_view line, JournalRecord&& r) {
    if (readLine) readLine(line);
    summarizer.add(r);
    plan.add(r);
  });
  for (const JournalRecord& launch : summarizer.summary().unfinishedLaunches) {
    plan.unfinishedLaunches.insert(launch.taskId);
  }

  JournalCompaction result;
  result.recordsBefore = plan.records;
  result.commitsFolded = plan.commitsFolded;
  write(encodeJournalHeader());
  auto emit = [&](std::string_view line) {
    write(line);
    ++result.recordsAfter;
  };
  // The second pass splits the lines the first one read (whole records after the header).
  size_t start = text.find('\n') + 1;
  for (size_t at = 0; at < plan.records; ++at) {
    const size_t end = text.find('\n', start);
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (readLine) readLine(line);
    switch (plan.actions[at]) {
      case Plan::kVerbatim:
        emit(text.substr(line.data() - text.data(), line.size() + 1));
        break;
      case Plan::kSkip:
        break;
      case Plan::kFoldHere:
        emit(encodeJournalRecord(plan.folds.at(plan.foldAt.at(at)).finished()));
        break;
      case Plan::kExecutorHere:
        emit(encodeJournalRecord(plan.executors.at(plan.executorAt.at(at)).second));
        break;
      case Plan::kLaunch:
        if (plan.unfinishedLaunches.count(launchedTaskId(line)) != 0) {
          emit(text.substr(line.data() - text.data(), line.size() + 1));
        }
        break;
    }
  }
  return result;
}

}  // namespace tide::am
