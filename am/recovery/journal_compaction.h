#pragma once

// Compaction of the AM's recovery journal (issue 16): the same state in a few records per stage
// instead of two per task. Pure: a journal's text in, an equivalent journal's lines out.
//
// What the rewrite keeps and folds, so that replaying it leaves the next attempt where
// replaying the original does:
//   - a stage's first-attempt commits without blocks (a final stage's, a noop stage's) become
//     one "commits" record at the place of the first of them: the indices as ranges, how many
//     each executor committed, the durations as counts. Nothing after such a commit depends on
//     which executor made it or how long it took, only on how many and on the stage's duration
//     counts (speculation's median), which the fold keeps;
//   - commits with blocks, or of a later attempt, stay as they are (lineage needs each one's
//     executor and block sizes);
//   - launches stay only for tasks that never committed (running when the attempt ended, or
//     lost): the fold carries the highest task id, so task ids still continue above it;
//   - an executor's records become one, at the place of its first, with what the later ones
//     added (its node, its URL);
//   - everything else (attempts, jobs, finished stages, bounds, unpersists) stays, in order.
// The text must be whole records (a torn tail already cut off).

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "am/recovery/recovery_journal.h"

namespace tide::am {

// Calls `write` with the compacted journal's text in pieces (its header first), in order, and
// `readLine` (when given) with each line of `text` it has read, in each of its two passes.
// Throws JournalError when the text does not decode, and whatever `write` throws.
JournalCompaction compactJournal(
    std::string_view text, const std::string& source,
    const std::function<void(std::string_view)>& write,
    const std::function<void(std::string_view line)>& readLine = nullptr);

}  // namespace tide::am
