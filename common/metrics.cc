#include "common/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "common/enum_names.h"
#include "common/strings.h"

namespace tide::am::metrics {
namespace {

// std::atomic<double>::fetch_add is C++20; a compare-exchange loop does the same.
void atomicAdd(std::atomic<double>& target, double by) {
  double current = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(current, current + by, std::memory_order_relaxed)) {
  }
}

bool validName(const std::string& name, bool allowColon) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (!(letter || (allowColon && c == ':') || (i > 0 && digit))) return false;
  }
  return true;
}

const char* typeName(MetricType type) {
  static constexpr const char* kNames[] = {"counter", "gauge", "histogram"};
  return enumName(type, kNames, "untyped");
}

// HELP text escapes only backslash and newline.
std::string escapeHelp(const std::string& text) {
  return replaceChars(text, {{'\\', "\\\\"}, {'\n', "\\n"}});
}

void appendSample(std::string& out, const std::string& name, const std::string& labels,
                  double value) {
  out += name;
  if (!labels.empty()) {
    out += '{';
    out += labels;
    out += '}';
  }
  out += ' ';
  out += formatMetricValue(value);
  out += '\n';
}

}  // namespace

std::string formatMetricValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, result.ptr);
}

std::string escapeLabelValue(const std::string& value) {
  return replaceChars(value, {{'\\', "\\\\"}, {'"', "\\\""}, {'\n', "\\n"}});
}

void Counter::inc(double by) {
  if (by > 0) atomicAdd(value_, by);
}

void Gauge::add(double by) {
  atomicAdd(value_, by);
}

Histogram::Histogram(std::vector<double> upperBounds)
    : upperBounds_(std::move(upperBounds)),
      bucketCounts_(new std::atomic<uint64_t>[upperBounds_.size() + 1]) {
  if (!std::is_sorted(upperBounds_.begin(), upperBounds_.end()) ||
      std::adjacent_find(upperBounds_.begin(), upperBounds_.end()) != upperBounds_.end()) {
    throw std::invalid_argument("histogram bucket bounds must be strictly ascending");
  }
  for (size_t i = 0; i <= upperBounds_.size(); ++i) bucketCounts_[i].store(0);
}

void Histogram::observe(double value) {
  // The first bucket whose bound is >= value ("le"); past the last bound: +Inf.
  const size_t bucket = static_cast<size_t>(
      std::lower_bound(upperBounds_.begin(), upperBounds_.end(), value) - upperBounds_.begin());
  bucketCounts_[bucket].fetch_add(1, std::memory_order_relaxed);
  atomicAdd(sum_, value);
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.upperBounds = upperBounds_;
  uint64_t running = 0;
  for (size_t i = 0; i <= upperBounds_.size(); ++i) {
    running += bucketCounts_[i].load(std::memory_order_relaxed);
    s.cumulativeCounts.push_back(running);
  }
  s.count = running;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

std::vector<double> exponentialBuckets(double start, double factor, int count) {
  if (start <= 0 || factor <= 1 || count < 1) {
    throw std::invalid_argument("exponentialBuckets: need start > 0, factor > 1, count >= 1");
  }
  std::vector<double> bounds;
  double bound = start;
  for (int i = 0; i < count; ++i) {
    bounds.push_back(bound);
    bound *= factor;
  }
  return bounds;
}

FamilyBase::FamilyBase(std::string name, std::string help, std::vector<std::string> labelNames,
                       MetricType type)
    : name_(std::move(name)),
      help_(std::move(help)),
      labelNames_(std::move(labelNames)),
      type_(type) {
  if (!validName(name_, /*allowColon=*/true)) {
    throw std::invalid_argument("invalid metric name '" + name_ + "'");
  }
  for (const auto& label : labelNames_) {
    // "__" is reserved for Prometheus; "le" is the histogram's own bucket label.
    if (!validName(label, /*allowColon=*/false) || label.rfind("__", 0) == 0 ||
        (type_ == MetricType::kHistogram && label == "le")) {
      throw std::invalid_argument("invalid label name '" + label + "' for " + name_);
    }
  }
}

void FamilyBase::checkLabelCount(const LabelValues& values) const {
  if (values.size() != labelNames_.size()) {
    throw std::invalid_argument(name_ + " takes " + std::to_string(labelNames_.size()) +
                                " label values, got " + std::to_string(values.size()));
  }
}

std::string FamilyBase::labelText(const LabelValues& values) const {
  std::string text;
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) text += ',';
    text += labelNames_[i];
    text += "=\"";
    text += escapeLabelValue(values[i]);
    text += '"';
  }
  return text;
}

void FamilyBase::render(std::string& out) const {
  out += "# HELP " + name_ + " " + escapeHelp(help_) + "\n";
  out += "# TYPE " + name_ + " " + typeName(type_) + "\n";
  renderChildren(out);
}

template <typename Metric>
void Family<Metric>::renderChildren(std::string& out) const {
  for (const auto& [values, child] : childList()) {
    appendSample(out, name_, labelText(values), child->value());
  }
}

template <>
void Family<Histogram>::renderChildren(std::string& out) const {
  for (const auto& [values, child] : childList()) {
    const Histogram::Snapshot s = child->snapshot();
    const std::string labels = labelText(values);
    const std::string prefix = labels.empty() ? "" : labels + ",";
    for (size_t i = 0; i < s.cumulativeCounts.size(); ++i) {
      const std::string le =
          i < s.upperBounds.size() ? formatMetricValue(s.upperBounds[i]) : std::string("+Inf");
      appendSample(out, name_ + "_bucket", prefix + "le=\"" + le + "\"",
                   static_cast<double>(s.cumulativeCounts[i]));
    }
    appendSample(out, name_ + "_sum", labels, s.sum);
    appendSample(out, name_ + "_count", labels, static_cast<double>(s.count));
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> labelNames,
                                 std::vector<double> upperBounds)
    : Family<Histogram>(std::move(name), std::move(help), std::move(labelNames),
                        MetricType::kHistogram),
      upperBounds_(std::move(upperBounds)) {
  Histogram check(upperBounds_);  // fail at registration, not at the first observation
}

std::unique_ptr<Histogram> HistogramFamily::makeChild() const {
  return std::make_unique<Histogram>(upperBounds_);
}

CounterFamily& Registry::counter(const std::string& name, const std::string& help,
                                 std::vector<std::string> labelNames) {
  // Prometheus' convention: a counter's name ends in _total.
  if (name.size() < 6 || name.compare(name.size() - 6, 6, "_total") != 0) {
    throw std::invalid_argument("counter " + name + " should end in _total");
  }
  return add(
      std::make_unique<CounterFamily>(name, help, std::move(labelNames), MetricType::kCounter));
}

GaugeFamily& Registry::gauge(const std::string& name, const std::string& help,
                             std::vector<std::string> labelNames) {
  return add(std::make_unique<GaugeFamily>(name, help, std::move(labelNames), MetricType::kGauge));
}

HistogramFamily& Registry::histogram(const std::string& name, const std::string& help,
                                     std::vector<double> upperBounds,
                                     std::vector<std::string> labelNames) {
  return add(
      std::make_unique<HistogramFamily>(name, help, std::move(labelNames), std::move(upperBounds)));
}

void Registry::addFamily(std::unique_ptr<FamilyBase> family) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& existing : families_) {
    if (existing->name() == family->name()) {
      throw std::invalid_argument("metric " + family->name() + " registered twice");
    }
  }
  families_.push_back(std::move(family));
}

std::string Registry::render() const {
  std::string out;
  out.reserve(4096);
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& family : families_) family->render(out);
  return out;
}

}  // namespace tide::am::metrics
