#pragma once

// What tide-rm accepts from a client, so that no request can make it hold or return unbounded
// data: sizes of a submission's fields, and the query of a list endpoint (filter values and
// paging). Every refusal is a rest::RestError naming the field: 413 for a value too large,
// 400 for a malformed one.

#include <cstddef>
#include <string>
#include <vector>

#include <httplib.h>

#include "rest/messages/cluster.h"

namespace tide::rm {

struct SubmissionLimits {
  size_t nameBytes = 1024;          // application-name, queue
  size_t commandBytes = 64 * 1024;  // am-container-spec command
  size_t environmentEntries = 256;
  size_t environmentKeyBytes = 1024;
  size_t environmentValueBytes = 64 * 1024;
  size_t environmentBytes = 256 * 1024;  // all keys and values together
};

// Throws RestError(413) naming the first field over its limit.
void checkSubmissionLimits(const rest::ApplicationSubmission& submission,
                           const SubmissionLimits& limits = {});

// A list endpoint's paging: ?limit=N (1..kMaxPageLimit, default all) and ?offset=N (>= 0).
struct Page {
  static constexpr size_t kMaxPageLimit = 100000;
  size_t offset = 0;
  size_t limit = kMaxPageLimit;
};

// Reads limit and offset; throws RestError(400) naming the parameter when one is not a
// non-negative integer in range.
Page pageOf(const httplib::Request& req);

// Keeps the page's slice of `items`.
template <typename T>
void applyPage(std::vector<T>& items, const Page& page) {
  if (page.offset >= items.size()) {
    items.clear();
    return;
  }
  items.erase(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(page.offset));
  if (items.size() > page.limit) items.resize(page.limit);
}

// ?states=RUNNING,accepted (YARN's filter, any case): the wanted application states, upper
// case; empty when the parameter is absent. Throws RestError(400) naming an unknown state.
std::vector<std::string> applicationStatesOf(const httplib::Request& req);

}  // namespace tide::rm
