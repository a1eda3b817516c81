#include "server/metrics/registry.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace warpd::server::metrics {
namespace {

static_assert(std::atomic<double>::is_always_lock_free);
static_assert(std::atomic<uint64_t>::is_always_lock_free);

// A programming error in how metrics are declared or used (see registry.h).
void ReportBug(const std::string& message) {
#ifndef NDEBUG
  std::fprintf(stderr, "warpd metrics: %s\n", message.c_str());
  std::abort();
#else
  spdlog::error("metrics: programming error: {}", message);
#endif
}

bool IsAsciiLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAsciiDigit(char c) { return c >= '0' && c <= '9'; }

bool IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length of the well-formed UTF-8 sequence at text[i], or 0 (Unicode 15,
// table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF).
size_t Utf8SequenceLength(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if (!IsContinuation(byte(i + k))) return 0;
  }
  return len;
}

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// The values as used for keys and output: valid UTF-8. Null when `values`
// are fine as they are (the common case, which then copies nothing).
std::unique_ptr<LabelValues> SanitizedValues(const LabelValues& values) {
  if (std::all_of(values.begin(), values.end(), IsValidUtf8)) return nullptr;
  auto sanitized = std::make_unique<LabelValues>();
  sanitized->reserve(values.size());
  for (const std::string& v : values) sanitized->push_back(SanitizeUtf8(v));
  return sanitized;
}

void AppendEscapedHelp(std::string& out, std::string_view help) {
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

void AppendEscapedLabelValue(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
}

// Numbers as Prometheus parses them: integers exactly; floating point in the
// shortest digits that read back to the same double, laid out as Go's
// FormatFloat(v, 'g', -1, 64) does (the Go client's output): positional
// unless the decimal exponent is below -4 or at least 21 ("400000", "0.0001",
// "1e-05", "1e+21"); NaN, +Inf, -Inf.
void AppendNumber(std::string& out, double v) {
  if (std::isnan(v)) {
    out += "NaN";
    return;
  }
  if (std::isinf(v)) {
    out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  char buf[400];  // fixed notation of the largest double has 309 digits
  auto result = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  const char* e = std::find(buf, result.ptr, 'e');
  int exponent = 0;
  std::from_chars(e + (e[1] == '+' ? 2 : 1), result.ptr, exponent);
  if (exponent >= -4 && exponent < 21) {
    result = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed);
  }
  out.append(buf, result.ptr);
}

template <typename T>
  requires std::is_integral_v<T>
void AppendNumber(std::string& out, T v) {
  char buf[24];
  const auto result = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, result.ptr);
}

// NAME[SUFFIX][{LABELS[,EXTRA]}] VALUE
template <typename T>
void AppendSample(std::string& out, std::string_view name, std::string_view suffix,
                  std::string_view labels, std::string_view extra_label, T value) {
  out.append(name);
  out.append(suffix);
  if (!labels.empty() || !extra_label.empty()) {
    out += '{';
    out.append(labels);
    if (!labels.empty() && !extra_label.empty()) out += ',';
    out.append(extra_label);
    out += '}';
  }
  out += ' ';
  AppendNumber(out, value);
  out += '\n';
}

void AppendCell(std::string& out, std::string_view name, std::string_view labels,
                const Counter& c) {
  AppendSample(out, name, "", labels, "", c.Value());
}
void AppendCell(std::string& out, std::string_view name, std::string_view labels,
                const DoubleCounter& c) {
  AppendSample(out, name, "", labels, "", c.Value());
}
void AppendCell(std::string& out, std::string_view name, std::string_view labels,
                const Gauge& g) {
  AppendSample(out, name, "", labels, "", g.Value());
}
void AppendCell(std::string& out, std::string_view name, std::string_view labels,
                const DoubleGauge& g) {
  AppendSample(out, name, "", labels, "", g.Value());
}
void AppendCell(std::string& out, std::string_view name, std::string_view labels,
                const Histogram& h) {
  const std::vector<uint64_t> counts = h.BucketCounts();
  const std::vector<double>& bounds = h.bounds();
  uint64_t cumulative = 0;
  std::string le;
  for (size_t i = 0; i < bounds.size(); ++i) {
    cumulative += counts[i];
    le = "le=\"";
    AppendNumber(le, bounds[i]);
    le += '"';
    AppendSample(out, name, "_bucket", labels, le, cumulative);
  }
  cumulative += counts.back();
  AppendSample(out, name, "_bucket", labels, "le=\"+Inf\"", cumulative);
  AppendSample(out, name, "_sum", labels, "", h.Sum());
  AppendSample(out, name, "_count", labels, "", cumulative);
}

const char* TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// The sample names a family of `type` called `name` puts in the output.
std::vector<std::string> SampleNames(std::string_view name, MetricType type) {
  std::vector<std::string> names{std::string(name)};
  if (type == MetricType::kHistogram) {
    for (const char* suffix : {"_bucket", "_sum", "_count"}) {
      names.push_back(std::string(name) + suffix);
    }
  }
  return names;
}

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!(IsAsciiLetter(c) || c == '_' || c == ':' || (i > 0 && IsAsciiDigit(c)))) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.substr(0, 2) == "__") return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!(IsAsciiLetter(c) || c == '_' || (i > 0 && IsAsciiDigit(c)))) return false;
  }
  return true;
}

std::string SanitizeUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const size_t len = Utf8SequenceLength(text, i);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(text.substr(i, len));
      i += len;
    }
  }
  return out;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  if (!(start > 0) || !(factor > 1) || count < 1 || !std::isfinite(start) ||
      !std::isfinite(factor)) {
    ReportBug(absl::StrCat("ExponentialBuckets(", start, ", ", factor, ", ", count,
                           "): need start > 0, factor > 1, count >= 1"));
    return {};
  }
  std::vector<double> bounds;
  double b = start;
  for (int i = 0; i < count && std::isfinite(b); ++i, b *= factor) bounds.push_back(b);
  return bounds;
}

// --- Histogram -------------------------------------------------------------

Histogram::Histogram(const std::vector<double>& bounds)
    : bounds_(bounds), buckets_(new std::atomic<uint64_t>[bounds.size() + 1]) {
  for (size_t i = 0; i <= bounds.size(); ++i) buckets_[i].store(0, std::memory_order_relaxed);
}

void Histogram::Observe(double value) {
  // First bound >= value; NaN compares false with everything, so it lands
  // past the end (+Inf).
  const size_t bucket =
      std::isnan(value) ? bounds_.size()
                        : std::lower_bound(bounds_.begin(), bounds_.end(), value) - bounds_.begin();
  buckets_[bucket].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(value, std::memory_order_relaxed);
}

std::vector<uint64_t> Histogram::BucketCounts() const {
  std::vector<uint64_t> counts(bounds_.size() + 1);
  for (size_t i = 0; i < counts.size(); ++i) {
    counts[i] = buckets_[i].load(std::memory_order_relaxed);
  }
  return counts;
}

// --- Families --------------------------------------------------------------

MetricFamily::MetricFamily(std::string name, std::string help, MetricType type,
                           std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)) {}

std::string MetricFamily::LabelText(const LabelValues& values) const {
  std::string text;
  for (size_t i = 0; i < values.size() && i < label_names_.size(); ++i) {
    if (i > 0) text += ',';
    text += label_names_[i];
    text += "=\"";
    AppendEscapedLabelValue(text, values[i]);
    text += '"';
  }
  return text;
}

template <typename Cell>
Family<Cell>::Family(std::string name, std::string help, MetricType type,
                     std::vector<std::string> label_names, std::vector<double> bounds)
    : MetricFamily(std::move(name), std::move(help), type, std::move(label_names)),
      bounds_(std::move(bounds)) {
  sink_ = NewChild({});
  if (this->label_names().empty()) {
    auto child = NewChild({});
    unlabelled_ = &child->cell;
    children_.emplace(LabelValues{}, std::move(child));
  }
}

template <typename Cell>
std::unique_ptr<typename Family<Cell>::Child> Family<Cell>::NewChild(
    const LabelValues& values) const {
  if constexpr (std::is_same_v<Cell, Histogram>) {
    return std::make_unique<Child>(LabelText(values), bounds_);
  } else {
    return std::make_unique<Child>(LabelText(values));
  }
}

template <typename Cell>
Cell& Family<Cell>::WrongLabelCount(size_t given) {
  ReportBug(absl::StrCat("metric ", name(), " has ", label_names().size(), " label(s), given ",
                         given, " value(s)"));
  return sink_->cell;
}

template <typename Cell>
Cell& Family<Cell>::With(const LabelValues& values) {
  if (values.size() != label_names().size()) return WrongLabelCount(values.size());
  const std::unique_ptr<LabelValues> sanitized = SanitizedValues(values);
  const LabelValues& key = sanitized ? *sanitized : values;
  absl::MutexLock lock(&mu_);
  auto it = children_.find(key);
  if (it == children_.end()) it = children_.emplace(key, NewChild(key)).first;
  return it->second->cell;
}

template <typename Cell>
bool Family<Cell>::Remove(const LabelValues& values) {
  if (label_names().empty()) return false;
  if (values.size() != label_names().size()) {
    WrongLabelCount(values.size());
    return false;
  }
  const std::unique_ptr<LabelValues> sanitized = SanitizedValues(values);
  const LabelValues& key = sanitized ? *sanitized : values;
  absl::MutexLock lock(&mu_);
  auto it = children_.find(key);
  if (it == children_.end()) return false;
  // Kept, not freed: callers may still hold references to the cell.
  removed_.push_back(std::move(it->second));
  children_.erase(it);
  return true;
}

template <typename Cell>
size_t Family<Cell>::size() const {
  absl::MutexLock lock(&mu_);
  return children_.size();
}

template <typename Cell>
void Family<Cell>::AppendSamples(std::string& out, const Emitter&) const {
  absl::MutexLock lock(&mu_);
  for (const auto& [values, child] : children_) AppendCell(out, name(), child->labels, child->cell);
}

template class Family<Counter>;
template class Family<DoubleCounter>;
template class Family<Gauge>;
template class Family<DoubleGauge>;
template class Family<Histogram>;

CollectedFamily::CollectedFamily(std::string name, std::string help, MetricType type,
                                 std::vector<std::string> label_names, const void* owner)
    : MetricFamily(std::move(name), std::move(help), type, std::move(label_names)),
      owner_(owner) {}

void CollectedFamily::AppendSamples(std::string& out, const Emitter& scrape) const {
  auto it = scrape.samples_.find(this);
  if (it == scrape.samples_.end()) return;
  for (const auto& [values, value] : it->second) {
    AppendSample(out, name(), "", LabelText(values), "", value);
  }
}

void Emitter::Emit(const CollectedFamily& family, const LabelValues& values, double value) {
  if (family.owner_ != registry_) {
    ReportBug(absl::StrCat("collector emitted ", family.name(), " of another registry"));
    return;
  }
  if (values.size() != family.label_names().size()) {
    ReportBug(absl::StrCat("metric ", family.name(), " has ", family.label_names().size(),
                           " label(s), emitted ", values.size(), " value(s)"));
    return;
  }
  const std::unique_ptr<LabelValues> sanitized = SanitizedValues(values);
  samples_[&family][sanitized ? *sanitized : values] = value;
}

// --- Registry --------------------------------------------------------------

Registry::Registry() = default;
Registry::~Registry() = default;

bool Registry::Insert(MetricFamily* family, const std::vector<std::string>& sample_names) {
  const std::string& name = family->name();
  std::string problem;
  if (!IsValidMetricName(name)) {
    problem = absl::StrCat("invalid metric name '", name, "'");
  }
  std::set<std::string_view> seen;
  for (const std::string& label : family->label_names()) {
    if (!problem.empty()) break;
    if (!IsValidLabelName(label)) {
      problem = absl::StrCat("metric ", name, ": invalid label name '", label, "'");
    } else if (!seen.insert(label).second) {
      problem = absl::StrCat("metric ", name, ": label '", label, "' given twice");
    } else if (label == "le" && family->type() == MetricType::kHistogram) {
      problem = absl::StrCat("histogram ", name, ": 'le' is reserved for bucket bounds");
    }
  }
  for (const std::string& sample : sample_names) {
    if (!problem.empty()) break;
    if (auto it = sample_names_.find(sample); it != sample_names_.end()) {
      problem = sample == name && it->second == name
                    ? absl::StrCat("metric ", name, " is registered twice")
                    : absl::StrCat("metric ", name, ": '", sample,
                                   "' is already used by metric ", it->second);
    }
  }
  if (!problem.empty()) {
    ReportBug(problem);
    return false;
  }
  by_name_.emplace(name, family);
  for (const std::string& sample : sample_names) sample_names_.emplace(sample, name);
  return true;
}

template <typename Cell>
Family<Cell>& Registry::Add(std::string_view name, std::string_view help, MetricType type,
                            std::vector<std::string> label_names, std::vector<double> bounds,
                            bool valid) {
  auto family = std::make_unique<Family<Cell>>(std::string(name), std::string(help), type,
                                               std::move(label_names), std::move(bounds));
  Family<Cell>& ref = *family;
  absl::MutexLock lock(&mu_);
  if (valid) Insert(&ref, SampleNames(name, type));
  families_.push_back(std::move(family));
  return ref;
}

Family<Counter>& Registry::AddCounter(std::string_view name, std::string_view help,
                                      std::vector<std::string> label_names) {
  return Add<Counter>(name, help, MetricType::kCounter, std::move(label_names), {}, true);
}

Family<DoubleCounter>& Registry::AddDoubleCounter(std::string_view name, std::string_view help,
                                                  std::vector<std::string> label_names) {
  return Add<DoubleCounter>(name, help, MetricType::kCounter, std::move(label_names), {}, true);
}

Family<Gauge>& Registry::AddGauge(std::string_view name, std::string_view help,
                                  std::vector<std::string> label_names) {
  return Add<Gauge>(name, help, MetricType::kGauge, std::move(label_names), {}, true);
}

Family<DoubleGauge>& Registry::AddDoubleGauge(std::string_view name, std::string_view help,
                                              std::vector<std::string> label_names) {
  return Add<DoubleGauge>(name, help, MetricType::kGauge, std::move(label_names), {}, true);
}

Family<Histogram>& Registry::AddHistogram(std::string_view name, std::string_view help,
                                          std::vector<std::string> label_names,
                                          std::vector<double> bounds) {
  if (!bounds.empty() && std::isinf(bounds.back()) && bounds.back() > 0) bounds.pop_back();
  bool sorted = true;
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i]) || (i > 0 && !(bounds[i - 1] < bounds[i]))) sorted = false;
  }
  if (!sorted) {
    ReportBug(absl::StrCat("histogram ", std::string(name),
                           ": bounds must be finite and strictly increasing"));
    // NDEBUG: the family is not exported, but its cells still work.
    std::erase_if(bounds, [](double b) { return !std::isfinite(b); });
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  }
  return Add<Histogram>(name, help, MetricType::kHistogram, std::move(label_names),
                        std::move(bounds), sorted);
}

const CollectedFamily& Registry::AddCollected(std::string_view name, std::string_view help,
                                              MetricType type,
                                              std::vector<std::string> label_names) {
  auto family = std::make_unique<CollectedFamily>(std::string(name), std::string(help), type,
                                                  std::move(label_names), this);
  const CollectedFamily& ref = *family;
  absl::MutexLock lock(&mu_);
  Insert(family.get(), SampleNames(name, type));
  families_.push_back(std::move(family));
  return ref;
}

const CollectedFamily& Registry::AddCollectedCounter(std::string_view name, std::string_view help,
                                                     std::vector<std::string> label_names) {
  return AddCollected(name, help, MetricType::kCounter, std::move(label_names));
}

const CollectedFamily& Registry::AddCollectedGauge(std::string_view name, std::string_view help,
                                                   std::vector<std::string> label_names) {
  return AddCollected(name, help, MetricType::kGauge, std::move(label_names));
}

void Registry::AddCollector(std::function<void(Emitter&)> collect) {
  auto shared = std::make_shared<const std::function<void(Emitter&)>>(std::move(collect));
  absl::MutexLock lock(&mu_);
  collectors_.push_back(std::move(shared));
}

std::string Registry::Render() const {
  // Collectors run without the lock, so one may take its time or touch the
  // registry (With()) without blocking registration or deadlocking.
  std::vector<std::shared_ptr<const std::function<void(Emitter&)>>> collectors;
  {
    absl::MutexLock lock(&mu_);
    collectors = collectors_;
  }
  Emitter scrape(this);
  for (const auto& collect : collectors) (*collect)(scrape);

  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, family] : by_name_) {
    const size_t start = out.size();
    if (!family->help().empty()) {
      out += "# HELP ";
      out += name;
      out += ' ';
      AppendEscapedHelp(out, family->help());
      out += '\n';
    }
    out += "# TYPE ";
    out += name;
    out += ' ';
    out += TypeName(family->type());
    out += '\n';
    const size_t header_end = out.size();
    family->AppendSamples(out, scrape);
    if (out.size() == header_end) out.resize(start);  // no samples: leave it out
  }
  return out;
}

}  // namespace warpd::server::metrics
