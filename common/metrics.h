#pragma once

// Prometheus metrics without a client library: counters, gauges and histograms, each a
// family with fixed label names and one child per set of label values, and a registry that
// renders them in the text exposition format (version 0.0.4). Updates are lock-free atomics,
// so the loops can record while /metrics renders; only creating a new child takes the
// family's mutex.
//
//   Registry registry;
//   auto& requests = registry.counter("tide_rm_requests_total", "Calls", {"call", "outcome"});
//   requests.labels({"allocate", "ok"}).inc();
//   std::string text = registry.render();

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace tide::am::metrics {

// Label values, in the order of the family's label names.
using LabelValues = std::vector<std::string>;

// A value that only goes up (reset only by a restart).
class Counter {
 public:
  void inc(double by = 1.0);  // `by` < 0 is ignored: a counter never goes down
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// A value that goes up and down.
class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  void add(double by);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Counts observations into cumulative buckets by upper bound, plus their sum and count.
class Histogram {
 public:
  // `upperBounds` ascending; the +Inf bucket is implicit.
  explicit Histogram(std::vector<double> upperBounds);
  void observe(double value);

  struct Snapshot {
    std::vector<double> upperBounds;
    std::vector<uint64_t> cumulativeCounts;  // one per bound, then +Inf (== count)
    double sum = 0;
    uint64_t count = 0;
  };
  // Read without stopping writers: count is taken from the buckets, so it always equals the
  // +Inf bucket, as Prometheus expects.
  Snapshot snapshot() const;

 private:
  std::vector<double> upperBounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> bucketCounts_;  // non-cumulative; last is +Inf
  std::atomic<double> sum_{0.0};
};

// Bucket bounds growing by `factor`: start, start*factor, ... (`count` of them).
std::vector<double> exponentialBuckets(double start, double factor, int count);

enum class MetricType { kCounter, kGauge, kHistogram };

class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, std::vector<std::string> labelNames,
             MetricType type);
  virtual ~FamilyBase() = default;
  const std::string& name() const { return name_; }
  MetricType type() const { return type_; }
  // Appends "# HELP", "# TYPE" and every child's samples.
  void render(std::string& out) const;

 protected:
  void checkLabelCount(const LabelValues& values) const;
  // Appends the sample lines of every child.
  virtual void renderChildren(std::string& out) const = 0;
  // `name="value",...` for these values (no braces), escaped.
  std::string labelText(const LabelValues& values) const;

  std::string name_;
  std::string help_;
  std::vector<std::string> labelNames_;
  MetricType type_;
};

// A metric family: one child per distinct set of label values, created on first use and kept
// (references stay valid for the family's life).
template <typename Metric>
class Family : public FamilyBase {
 public:
  using FamilyBase::FamilyBase;

  // The child for these label values (as many as the family has label names).
  Metric& labels(const LabelValues& values) {
    checkLabelCount(values);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = children_.find(values);
    if (it == children_.end()) it = children_.emplace(values, makeChild()).first;
    return *it->second;
  }
  // The one child of a family without labels.
  Metric& get() { return labels({}); }

 protected:
  // Histograms need their bucket bounds: HistogramFamily overrides this.
  virtual std::unique_ptr<Metric> makeChild() const {
    if constexpr (std::is_default_constructible_v<Metric>) {
      return std::make_unique<Metric>();
    } else {
      throw std::logic_error(name_ + ": no way to make a child");
    }
  }
  void renderChildren(std::string& out) const override;

  // The children in label order. Children are never removed, so the pointers stay valid:
  // rendering copies them under the mutex and reads the values after letting go.
  std::vector<std::pair<LabelValues, const Metric*>> childList() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::pair<LabelValues, const Metric*>> list;
    list.reserve(children_.size());
    for (const auto& [values, child] : children_) list.emplace_back(values, child.get());
    return list;
  }

  mutable std::mutex mu_;
  std::map<LabelValues, std::unique_ptr<Metric>> children_;  // sorted: stable output
};

// Histograms render several lines per child (buckets, sum, count).
template <>
void Family<Histogram>::renderChildren(std::string& out) const;

// Defined in metrics.cc for exactly these three.
extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

class HistogramFamily : public Family<Histogram> {
 public:
  HistogramFamily(std::string name, std::string help, std::vector<std::string> labelNames,
                  std::vector<double> upperBounds);

 protected:
  std::unique_ptr<Histogram> makeChild() const override;

 private:
  std::vector<double> upperBounds_;
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;

// The metrics of one process, rendered in registration order.
class Registry {
 public:
  // Throw std::invalid_argument for a name or label name Prometheus would refuse, or a name
  // registered twice.
  CounterFamily& counter(const std::string& name, const std::string& help,
                         std::vector<std::string> labelNames = {});
  GaugeFamily& gauge(const std::string& name, const std::string& help,
                     std::vector<std::string> labelNames = {});
  HistogramFamily& histogram(const std::string& name, const std::string& help,
                             std::vector<double> upperBounds,
                             std::vector<std::string> labelNames = {});

  // The whole exposition, "# HELP"/"# TYPE" lines then samples for every family.
  std::string render() const;

 private:
  // Registers `family` (a name taken already is an error) and returns it.
  template <typename F>
  F& add(std::unique_ptr<F> family) {
    F& added = *family;
    addFamily(std::move(family));
    return added;
  }
  void addFamily(std::unique_ptr<FamilyBase> family);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_;
};

// How Prometheus text writes a sample value: shortest round-trip decimal, "+Inf", "-Inf",
// "NaN".
std::string formatMetricValue(double value);
// Escapes a label value (backslash, double quote, newline).
std::string escapeLabelValue(const std::string& value);

// The content type of the exposition.
inline constexpr char kPrometheusContentType[] = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace tide::am::metrics
