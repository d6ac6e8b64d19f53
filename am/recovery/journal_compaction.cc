#include "am/recovery/journal_compaction.h"

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
  std::map<std::string, Fold> folds;
  std::unordered_set<size_t> keptWhole;  // foldable records that could not be folded
  std::unordered_map<std::string, std::pair<size_t, JournalRecord>> executors;
  std::unordered_set<int64_t> unfinishedLaunches;
  size_t records = 0;
  int64_t commitsFolded = 0;

  void add(const JournalRecord& r) {
    const size_t at = records++;
    if (r.kind == Kind::kExecutor) {
      auto [it, added] = executors.emplace(r.executorId, std::make_pair(at, r));
      if (!added) {
        JournalRecord& known = it->second.second;
        known.containerId = r.containerId;
        if (!r.node.empty()) known.node = r.node;
        if (!r.url.empty()) known.url = r.url;
      }
      return;
    }
    if (!foldable(r)) return;
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
        keptWhole.insert(at);
        if (added) folds.erase(it);
        return;
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
  }
};

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
  size_t at = 0;
  auto emit = [&](std::string_view line) {
    write(line);
    ++result.recordsAfter;
  };
  decodeJournalLines(text, source, [&](std::string_view line, JournalRecord&& r) {
    if (readLine) readLine(line);
    const size_t here = at++;
    if (r.kind == Kind::kExecutor) {
      const auto& [first, merged] = plan.executors.at(r.executorId);
      if (first == here) emit(encodeJournalRecord(merged));
      return;
    }
    if (r.kind == Kind::kLaunch && plan.unfinishedLaunches.count(r.taskId) == 0) return;
    if (foldable(r) && plan.keptWhole.count(here) == 0) {
      const Fold& fold = plan.folds.at(stageKey(r));
      if (fold.firstRecord == here) emit(encodeJournalRecord(fold.finished()));
      return;
    }
    emit(std::string(line) + "\n");
  });
  return result;
}

}  // namespace tide::am
