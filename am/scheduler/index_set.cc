#include "am/scheduler/index_set.h"

#include <algorithm>
#include <cstring>

namespace tide::am {

namespace {

constexpr size_t kWordsPerChunk = IndexSet::kChunkBits / 64;

}  // namespace

IndexSet::IndexSet(int64_t size)
    : size_(std::max<int64_t>(size, 0)),
      chunkCounts_(static_cast<size_t>((size_ + kChunkBits - 1) / kChunkBits), 0),
      bitmaps_(chunkCounts_.size()) {}

IndexSet::IndexSet(const IndexSet& other)
    : size_(other.size_),
      count_(other.count_),
      chunkCounts_(other.chunkCounts_),
      bitmaps_(other.bitmaps_.size()) {
  for (size_t i = 0; i < bitmaps_.size(); ++i) {
    if (!other.bitmaps_[i]) continue;
    bitmaps_[i] = std::make_unique<uint64_t[]>(kWordsPerChunk);
    std::memcpy(bitmaps_[i].get(), other.bitmaps_[i].get(), kWordsPerChunk * sizeof(uint64_t));
  }
}

IndexSet& IndexSet::operator=(const IndexSet& other) {
  if (this != &other) *this = IndexSet(other);
  return *this;
}

int64_t IndexSet::chunkLength(size_t chunk) const {
  return std::min<int64_t>(kChunkBits, size_ - static_cast<int64_t>(chunk) * kChunkBits);
}

bool IndexSet::contains(int64_t index) const {
  if (index < 0 || index >= size_) return false;
  const size_t chunk = static_cast<size_t>(index / kChunkBits);
  const uint32_t inChunk = chunkCounts_[chunk];
  if (inChunk == 0) return false;
  if (static_cast<int64_t>(inChunk) == chunkLength(chunk)) return true;
  const uint64_t bit = static_cast<uint64_t>(index % kChunkBits);
  return (bitmaps_[chunk][bit / 64] >> (bit % 64)) & 1U;
}

bool IndexSet::insert(int64_t index) {
  if (index < 0 || index >= size_ || contains(index)) return false;
  const size_t chunk = static_cast<size_t>(index / kChunkBits);
  const uint64_t bit = static_cast<uint64_t>(index % kChunkBits);
  ++count_;
  if (static_cast<int64_t>(++chunkCounts_[chunk]) == chunkLength(chunk)) {
    bitmaps_[chunk].reset();  // full: the counter says it all
    return true;
  }
  if (!bitmaps_[chunk]) bitmaps_[chunk] = std::make_unique<uint64_t[]>(kWordsPerChunk);
  bitmaps_[chunk][bit / 64] |= uint64_t{1} << (bit % 64);
  return true;
}

bool IndexSet::erase(int64_t index) {
  if (!contains(index)) return false;
  const size_t chunk = static_cast<size_t>(index / kChunkBits);
  const uint64_t bit = static_cast<uint64_t>(index % kChunkBits);
  --count_;
  const bool wasFull = static_cast<int64_t>(chunkCounts_[chunk]) == chunkLength(chunk);
  if (--chunkCounts_[chunk] == 0) {
    bitmaps_[chunk].reset();
    return true;
  }
  if (wasFull) {
    bitmaps_[chunk] = std::make_unique<uint64_t[]>(kWordsPerChunk);
    const int64_t length = chunkLength(chunk);
    for (int64_t b = 0; b < length; ++b) {
      bitmaps_[chunk][static_cast<size_t>(b) / 64] |= uint64_t{1} << (b % 64);
    }
  }
  bitmaps_[chunk][bit / 64] &= ~(uint64_t{1} << (bit % 64));
  return true;
}

void IndexSet::fill() {
  count_ = size_;
  for (size_t i = 0; i < chunkCounts_.size(); ++i) {
    chunkCounts_[i] = static_cast<uint32_t>(chunkLength(i));
    bitmaps_[i].reset();
  }
}

void IndexSet::clear() {
  count_ = 0;
  std::fill(chunkCounts_.begin(), chunkCounts_.end(), 0);
  for (Words& words : bitmaps_) words.reset();
}

void IndexSet::forEachRunOf(bool present, const std::function<bool(int64_t, int64_t)>& fn) const {
  int64_t runStart = -1;  // the open run, [runStart, index) so far
  const auto extend = [&](int64_t at, bool in) {
    if (in == present) {
      if (runStart < 0) runStart = at;
      return true;
    }
    if (runStart < 0) return true;
    const int64_t first = runStart;
    runStart = -1;
    return fn(first, at - 1);
  };
  for (size_t chunk = 0; chunk < chunkCounts_.size(); ++chunk) {
    const int64_t base = static_cast<int64_t>(chunk) * kChunkBits;
    const int64_t length = chunkLength(chunk);
    const uint32_t inChunk = chunkCounts_[chunk];
    if (inChunk == 0 || static_cast<int64_t>(inChunk) == length) {
      // The whole chunk one way: it extends or ends the open run at its first index only.
      if (!extend(base, inChunk != 0)) return;
      continue;
    }
    const uint64_t* words = bitmaps_[chunk].get();
    for (int64_t b = 0; b < length; ++b) {
      if (!extend(base + b, (words[static_cast<size_t>(b) / 64] >> (b % 64)) & 1U)) return;
    }
  }
  if (runStart >= 0) fn(runStart, size_ - 1);
}

void IndexSet::forEachRun(const std::function<bool(int64_t, int64_t)>& fn) const {
  forEachRunOf(true, fn);
}

void IndexSet::forEachAbsentRun(const std::function<bool(int64_t, int64_t)>& fn) const {
  forEachRunOf(false, fn);
}

std::vector<int64_t> IndexSet::absent(int64_t limit) const {
  std::vector<int64_t> indices;
  if (limit <= 0) return indices;
  forEachAbsentRun([&](int64_t first, int64_t last) {
    for (int64_t i = first; i <= last; ++i) {
      indices.push_back(i);
      if (static_cast<int64_t>(indices.size()) >= limit) return false;
    }
    return true;
  });
  return indices;
}

size_t IndexSet::heapBytes() const {
  size_t bytes = chunkCounts_.capacity() * sizeof(uint32_t) + bitmaps_.capacity() * sizeof(Words);
  for (const Words& words : bitmaps_) {
    if (words) bytes += kWordsPerChunk * sizeof(uint64_t);
  }
  return bytes;
}

}  // namespace tide::am
