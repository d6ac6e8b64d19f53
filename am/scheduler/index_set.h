#pragma once

// A set of task indices in [0, size) that costs memory by how scattered it is, not by how many
// indices it holds: the indices are cut into chunks of 65,536; a chunk with none or all of its
// indices is a counter, only a chunk partly in the set keeps a bitmap (8 KiB). A stage's
// tasks complete roughly in index order, so its done set is a few partial chunks around the
// launch front whatever the stage size; at worst (every other index) it is a plain bitmap.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace tide::am {

class IndexSet {
 public:
  IndexSet() = default;
  // The empty set over [0, size).
  explicit IndexSet(int64_t size);
  IndexSet(const IndexSet& other);
  IndexSet& operator=(const IndexSet& other);
  IndexSet(IndexSet&&) noexcept = default;
  IndexSet& operator=(IndexSet&&) noexcept = default;

  int64_t size() const { return size_; }
  int64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  bool full() const { return count_ == size_; }
  // False for an index outside [0, size).
  bool contains(int64_t index) const;
  // True when the index was not in the set (and is now); false outside [0, size).
  bool insert(int64_t index);
  // True when the index was in the set (and is no longer).
  bool erase(int64_t index);
  // Every index of [0, size) in, or none; both free the bitmaps.
  void fill();
  void clear();
  // Calls fn(first, last) for each maximal run [first, last] of indices in the set (or, for
  // forEachAbsentRun, not in it), ascending; fn returns false to stop.
  void forEachRun(const std::function<bool(int64_t, int64_t)>& fn) const;
  void forEachAbsentRun(const std::function<bool(int64_t, int64_t)>& fn) const;
  // The indices not in the set, ascending, at most `limit` of them.
  std::vector<int64_t> absent(int64_t limit = INT64_MAX) const;
  // Bytes held beyond the object itself (for the memory tests).
  size_t heapBytes() const;

  static constexpr int64_t kChunkBits = 65536;

 private:
  using Words = std::unique_ptr<uint64_t[]>;
  int64_t chunkLength(size_t chunk) const;
  void forEachRunOf(bool present, const std::function<bool(int64_t, int64_t)>& fn) const;

  int64_t size_ = 0;
  int64_t count_ = 0;
  std::vector<uint32_t> chunkCounts_;  // indices in the set, per chunk
  std::vector<Words> bitmaps_;         // non-null only for a partly filled chunk
};

}  // namespace tide::am
