// warpd server: a metrics registry rendered in the Prometheus text format.
//
// Families are registered once, with a name, help text and label names fixed
// for their lifetime; each distinct tuple of label values is a child holding
// one cell (a counter, gauge or histogram):
//
//   Registry registry;
//   Family<Counter>& launches =
//       registry.AddCounter("warpd_launches_total", "Kernel launches.", {"tenant"});
//   Counter& alice = launches.With({"alice"});  // takes a lock: keep the reference
//   alice.Increment();                          // one relaxed atomic add
//   std::string text = registry.Render();       // text exposition format 0.0.4
//
// Values computed only when scraped come from collectors: a collected family
// is registered like any other (AddCollectedGauge), and a collector added
// with AddCollector emits its samples anew on every Render. Those samples
// exist for that one scrape only, so nothing goes stale when, say, a tenant
// disappears.
//
// Rendering: families in order of name; children in order of label values
// (byte-wise); a family with no sample (a labelled family with no child yet)
// is left out. HELP text escapes backslash and newline; label values escape
// backslash, double quote and newline; a histogram renders its cumulative
// _bucket{le="..."} lines ending with le="+Inf", then _sum and _count.
//
// Errors. Names are chosen by programmers: an invalid metric or label name, a
// name registered twice (a histogram also reserves NAME_bucket, NAME_sum and
// NAME_count), unsorted histogram bounds, or a wrong number of label values
// is a bug. Without NDEBUG (the project's usual builds) it aborts with a
// message; with NDEBUG the family or sample is logged and left out of the
// output, and the caller still gets a working (unexported) cell. Label VALUES
// may come from users or config and are never an error: any bytes are
// accepted, invalid UTF-8 is replaced by U+FFFD and the rest escaped.
//
// Ownership: the registry owns its families, a family its children. A
// reference from With() stays valid for the registry's lifetime, also after
// Remove() (its updates are then no longer exported), so memory grows by one
// cell for every child removed; removal is meant for rare events (a tenant
// dropped on config reload), not per-request labels.
//
// Thread-safety: everything is thread-safe except Emitter (below). Cell
// updates are lock-free (relaxed atomics; about 7 ns uncontended, a
// histogram observation 18 ns); With(), Remove(), registration and Render()
// take mutexes (a two-label With() about 0.5 us). Collectors run inside Render() on the caller's thread, with no
// registry lock held, possibly concurrently with themselves (two scrapes at
// once); whatever a collector touches must outlive the last Render().
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace warpd::server::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// One value per label name of the family, in the same order.
using LabelValues = std::vector<std::string>;

// Prometheus name rules: metric names [a-zA-Z_:][a-zA-Z0-9_:]*; label names
// [a-zA-Z_][a-zA-Z0-9_]* and not starting with "__" (reserved).
bool IsValidMetricName(std::string_view name);
bool IsValidLabelName(std::string_view name);

// `text` as valid UTF-8: each byte that does not start a well-formed sequence
// becomes U+FFFD.
std::string SanitizeUtf8(std::string_view text);

// Histogram bounds: `count` bounds start, start*factor, start*factor^2, ...
// (start > 0, factor > 1, count >= 1; anything else is a programming error,
// handled as for invalid names).
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// --- Cells. Each is one child's value; updates are lock-free. -------------

// Monotonic integer counter.
class alignas(64) Counter {
 public:
  void Increment(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Monotonic floating-point counter (seconds of work, say). Negative or NaN
// amounts are ignored: a counter never goes down.
class alignas(64) DoubleCounter {
 public:
  void Increment(double amount) {
    if (amount > 0) value_.fetch_add(amount, std::memory_order_relaxed);
  }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

class alignas(64) Gauge {
 public:
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Add(int64_t delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  int64_t Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

class alignas(64) DoubleGauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double delta) { value_.fetch_add(delta, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// Counts observations per bucket (value <= bound; NaN counts only in +Inf)
// and sums them. Observe is two relaxed atomic adds (the bucket, the sum);
// _count is the sum of the buckets, so it always equals the +Inf bucket, but
// a scrape racing with Observe may see _sum without the newest value.
class alignas(64) Histogram {
 public:
  // `bounds`: sorted, finite, without +Inf; must outlive the histogram.
  explicit Histogram(const std::vector<double>& bounds);

  void Observe(double value);

  const std::vector<double>& bounds() const { return bounds_; }
  // Per-bucket (not cumulative) counts; the last one is the +Inf bucket.
  std::vector<uint64_t> BucketCounts() const;
  double Sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  const std::vector<double>& bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // bounds_.size() + 1
  std::atomic<double> sum_{0};
};

// --- Families. -----------------------------------------------------------

class Emitter;

// What every family has; Registry renders them through AppendTo.
class MetricFamily {
 public:
  virtual ~MetricFamily() = default;
  MetricFamily(const MetricFamily&) = delete;
  MetricFamily& operator=(const MetricFamily&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

 protected:
  MetricFamily(std::string name, std::string help, MetricType type,
               std::vector<std::string> label_names);

  // `name="value",...` for these (already sanitized) values, escaped.
  std::string LabelText(const LabelValues& values) const;

 private:
  friend class Registry;
  // Appends this family's sample lines (no HELP/TYPE) for one scrape.
  virtual void AppendSamples(std::string& out, const Emitter& scrape) const = 0;

  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
};

// A family of cells; Cell is Counter, DoubleCounter, Gauge, DoubleGauge or
// Histogram.
template <typename Cell>
class Family final : public MetricFamily {
 public:
  // The child for these label values (one per label name), made at zero on
  // first use. Takes the family's lock and compares strings: look the child
  // up once and keep the reference for the hot path. Stays valid for the
  // registry's lifetime.
  Cell& With(const LabelValues& values) ABSL_LOCKS_EXCLUDED(mu_);

  // The only child of a family without labels; lock-free. (On a labelled
  // family: a programming error, see above.)
  Cell& Get() { return unlabelled_ != nullptr ? *unlabelled_ : WrongLabelCount(0); }

  // Stops exporting the child with these values; true when there was one.
  // References to it stay valid, but their updates are lost; a later With()
  // of the same values makes a new child starting at zero. A family without
  // labels has nothing to remove (false).
  bool Remove(const LabelValues& values) ABSL_LOCKS_EXCLUDED(mu_);

  // Number of exported children.
  size_t size() const ABSL_LOCKS_EXCLUDED(mu_);

  // Made by Registry only (public for std::make_unique).
  Family(std::string name, std::string help, MetricType type,
         std::vector<std::string> label_names, std::vector<double> bounds);

 private:
  struct Child {
    template <typename... Args>
    explicit Child(std::string labels, Args&&... args)
        : cell(std::forward<Args>(args)...), labels(std::move(labels)) {}
    Cell cell;
    const std::string labels;  // rendered `name="value",...`
  };

  std::unique_ptr<Child> NewChild(const LabelValues& values) const;
  // Reports the bug, returns the sink.
  Cell& WrongLabelCount(size_t given);
  void AppendSamples(std::string& out, const Emitter& scrape) const override
      ABSL_LOCKS_EXCLUDED(mu_);

  const std::vector<double> bounds_;  // histograms only
  mutable absl::Mutex mu_;
  std::map<LabelValues, std::unique_ptr<Child>> children_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Child>> removed_ ABSL_GUARDED_BY(mu_);
  // Where With() with a wrong number of values goes (NDEBUG builds): never
  // exported.
  std::unique_ptr<Child> sink_;
  Cell* unlabelled_ = nullptr;  // families without labels
};

extern template class Family<Counter>;
extern template class Family<DoubleCounter>;
extern template class Family<Gauge>;
extern template class Family<DoubleGauge>;
extern template class Family<Histogram>;

// A counter or gauge family whose samples collectors emit at each scrape.
class CollectedFamily final : public MetricFamily {
 public:
  // Made by Registry only.
  CollectedFamily(std::string name, std::string help, MetricType type,
                  std::vector<std::string> label_names, const void* owner);

 private:
  friend class Emitter;
  void AppendSamples(std::string& out, const Emitter& scrape) const override;
  const void* const owner_;  // the registry
};

// Given to collectors during one Render; valid only during the collector's
// call. Not thread-safe: a collector must not hand it to other threads.
class Emitter {
 public:
  // Adds a sample of `family` (from the rendering registry). Emitting the
  // same label values twice keeps the last value. A family of another
  // registry or a wrong number of values is a programming error (see above).
  void Emit(const CollectedFamily& family, const LabelValues& values, double value);

 private:
  friend class Registry;
  friend class CollectedFamily;
  explicit Emitter(const void* registry) : registry_(registry) {}

  const void* const registry_;
  std::map<const CollectedFamily*, std::map<LabelValues, double>> samples_;
};

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Register a family; `name` must be unique in the registry. Families
  // without labels export their single child (at zero) from the start.
  Family<Counter>& AddCounter(std::string_view name, std::string_view help,
                              std::vector<std::string> label_names = {});
  Family<DoubleCounter>& AddDoubleCounter(std::string_view name, std::string_view help,
                                          std::vector<std::string> label_names = {});
  Family<Gauge>& AddGauge(std::string_view name, std::string_view help,
                          std::vector<std::string> label_names = {});
  Family<DoubleGauge>& AddDoubleGauge(std::string_view name, std::string_view help,
                                      std::vector<std::string> label_names = {});
  // `bounds`: strictly increasing finite upper bounds ("+Inf" is implied;
  // a trailing infinity is dropped). "le" cannot be a label name.
  Family<Histogram>& AddHistogram(std::string_view name, std::string_view help,
                                  std::vector<std::string> label_names,
                                  std::vector<double> bounds);

  // Families whose samples only collectors emit (type kCounter or kGauge).
  const CollectedFamily& AddCollectedCounter(std::string_view name, std::string_view help,
                                             std::vector<std::string> label_names = {});
  const CollectedFamily& AddCollectedGauge(std::string_view name, std::string_view help,
                                           std::vector<std::string> label_names = {});

  // `collect` runs at every Render (see the thread-safety note above). It
  // must not call Render.
  void AddCollector(std::function<void(Emitter&)> collect) ABSL_LOCKS_EXCLUDED(mu_);

  // The text exposition format, version 0.0.4.
  std::string Render() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Registers `family` under its name; false (after reporting) when it
  // clashes with another or its names are invalid.
  bool Insert(MetricFamily* family, const std::vector<std::string>& sample_names)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `valid`: false to keep the family out of the output (already reported).
  template <typename Cell>
  Family<Cell>& Add(std::string_view name, std::string_view help, MetricType type,
                    std::vector<std::string> label_names, std::vector<double> bounds,
                    bool valid) ABSL_LOCKS_EXCLUDED(mu_);
  const CollectedFamily& AddCollected(std::string_view name, std::string_view help,
                                      MetricType type, std::vector<std::string> label_names)
      ABSL_LOCKS_EXCLUDED(mu_);

  mutable absl::Mutex mu_;
  // Every family made, exported or not (invalid ones, in NDEBUG builds).
  std::vector<std::unique_ptr<MetricFamily>> families_ ABSL_GUARDED_BY(mu_);
  // The exported ones, in render order.
  std::map<std::string, const MetricFamily*, std::less<>> by_name_ ABSL_GUARDED_BY(mu_);
  // Every sample name taken (a histogram's NAME_bucket, NAME_sum, NAME_count).
  std::map<std::string, std::string, std::less<>> sample_names_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<const std::function<void(Emitter&)>>> collectors_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace warpd::server::metrics
