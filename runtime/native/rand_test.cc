// Tests of rand.h and noise.h (Warp's "Random" builtins).
//
// 1. Reference values: tests/fixtures/warp_random_reference.json holds what
//    Warp 1.19 itself returned for a grid of seeds, offsets and inputs of every
//    builtin and overload (tests/fixtures/gen_warp_random_reference.py made it
//    with Warp's CPU backend). Integers and states must match exactly; floats
//    bit for bit where only IEEE arithmetic and sqrt are involved, and within
//    kUlpTolerance where logf/cosf/sinf/acosf/powf are (see FloatsClose).
// 2. Properties that hold whatever the reference says: moments of the uniform,
//    normal and Poisson distributions, the samplers' shapes, sample_cdf's
//    frequencies and bounds, noise's range, zeros, continuity and periods,
//    curl noise against finite differences of noise, and the inputs on which
//    Warp's formulas are undefined (they must return, not trap).
//
// The fixture directory comes from the compile definition WARPD_FIXTURES_DIR.

// The headers' float results are Warp's only if a*b+c is not fused (warpd's CPU
// JIT compiles with -ffp-contract=off); this applies to the headers below too.
#pragma STDC FP_CONTRACT OFF

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "warpd/native/noise.h"
#include "warpd/native/rand.h"

#ifndef WARPD_FIXTURES_DIR
#error "compile with -DWARPD_FIXTURES_DIR=\"<repo>/tests/fixtures\""
#endif

namespace {

using wp::float32;
using wp::int32;
using wp::uint32;
using wp::vec2f;
using wp::vec3f;
using wp::vec4f;

// --- A minimal JSON reader (objects, arrays, strings, numbers, literals) ------
// Numbers keep their text so integers up to 2^32 and float32 values written by
// Python's repr() read back exactly.

struct Json {
  enum Kind { kNull, kBool, kNumber, kString, kArray, kObject } kind = kNull;
  std::string text;  // number text or string contents
  bool boolean = false;
  std::vector<Json> items;        // array elements, or object values
  std::vector<std::string> keys;  // object keys, parallel to items

  const Json* Find(const std::string& key) const;
  long long Int() const { return std::strtoll(text.c_str(), nullptr, 10); }
  double Double() const { return std::strtod(text.c_str(), nullptr); }
};

const Json* Json::Find(const std::string& key) const {
  for (size_t i = 0; i < keys.size(); ++i)
    if (keys[i] == key) return &items[i];
  return nullptr;
}

class JsonReader {
 public:
  explicit JsonReader(const std::string& s) : s_(s) {}

  // Parses the whole input; false with *error set on malformed input.
  bool Parse(Json* out, std::string* error) {
    bool ok = Value(out) && (SkipSpace(), pos_ == s_.size());
    if (!ok) *error = "malformed JSON near byte " + std::to_string(pos_);
    return ok;
  }

 private:
  void SkipSpace() {
    while (pos_ < s_.size() && std::strchr(" \t\r\n", s_[pos_]) != nullptr) ++pos_;
  }
  bool Eat(char c) {
    SkipSpace();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool String(std::string* out) {
    if (!Eat('"')) return false;
    while (pos_ < s_.size() && s_[pos_] != '"') {
      if (s_[pos_] == '\\') {
        if (++pos_ >= s_.size()) return false;
        char c = s_[pos_];
        if (c == 'u') return false;  // not needed by the fixture
        out->push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
      } else {
        out->push_back(s_[pos_]);
      }
      ++pos_;
    }
    return pos_++ < s_.size();
  }
  bool Literal(const char* word) {
    size_t n = std::strlen(word);
    if (s_.compare(pos_, n, word) != 0) return false;
    pos_ += n;
    return true;
  }
  bool Value(Json* out) {
    SkipSpace();
    if (pos_ >= s_.size()) return false;
    char c = s_[pos_];
    if (c == '{') {
      out->kind = Json::kObject;
      ++pos_;
      if (Eat('}')) return true;
      do {
        std::string key;
        Json value;
        if (!String(&key) || !Eat(':') || !Value(&value)) return false;
        out->keys.push_back(std::move(key));
        out->items.push_back(std::move(value));
      } while (Eat(','));
      return Eat('}');
    }
    if (c == '[') {
      out->kind = Json::kArray;
      ++pos_;
      if (Eat(']')) return true;
      do {
        out->items.emplace_back();
        if (!Value(&out->items.back())) return false;
      } while (Eat(','));
      return Eat(']');
    }
    if (c == '"') {
      out->kind = Json::kString;
      return String(&out->text);
    }
    if (Literal("true") || Literal("false")) {
      out->kind = Json::kBool;
      out->boolean = s_[pos_ - 1] == 'e' && s_[pos_ - 2] == 'u';
      return true;
    }
    if (Literal("null")) return true;
    size_t start = pos_;
    while (pos_ < s_.size() && std::strchr("+-.0123456789eE", s_[pos_]) != nullptr) ++pos_;
    if (pos_ == start) return false;
    out->kind = Json::kNumber;
    out->text = s_.substr(start, pos_ - start);
    return true;
  }

  const std::string& s_;
  size_t pos_ = 0;
};

TEST(JsonReaderTest, ReadsTheFixtureSubset) {
  Json j;
  std::string error;
  const std::string text =
      R"({"a": [1, -2, 4294967295, -0.0, 1.5e-07], "b": {"c": "x\"y"}, "d": [true, false, null], "e": []})";
  ASSERT_TRUE(JsonReader(text).Parse(&j, &error)) << error;
  const Json* a = j.Find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 5u);
  EXPECT_EQ(a->items[1].Int(), -2);
  EXPECT_EQ(a->items[2].Int(), 4294967295ll);
  EXPECT_TRUE(std::signbit(a->items[3].Double()));
  EXPECT_EQ((float)a->items[4].Double(), 1.5e-07f);
  EXPECT_EQ(j.Find("b")->Find("c")->text, "x\"y");
  EXPECT_TRUE(j.Find("d")->items[0].boolean);
  EXPECT_FALSE(j.Find("d")->items[1].boolean);
  EXPECT_TRUE(j.Find("e")->items.empty());
  EXPECT_FALSE(JsonReader("[1, 2").Parse(&j, &error));
  EXPECT_FALSE(JsonReader("{\"a\" 1}").Parse(&j, &error));
}

// --- 1. Warp's reference values ----------------------------------------------

// Results that go through the platform's logf/cosf/sinf/acosf/powf may differ
// from the reference's libm (glibc 2.36) by the libm's error: glibc's and
// CUDA's single-precision functions are within 1-2 ulp, and a result combines
// up to three of them (r * cos(theta) * sin(phi)), so 4 ulp of the result.
// Results near 0 (cos near pi/2, a coordinate near a pole) are allowed the same
// error relative to 1, the scale of the inputs: 4 * 2^-24.
constexpr int kUlpTolerance = 4;

int64_t OrderedBits(float f) {
  int32_t i;
  std::memcpy(&i, &f, sizeof i);
  return i < 0 ? -(int64_t)(i & 0x7fffffff) : (int64_t)i;
}

bool FloatsClose(float got, float want) {
  if (std::llabs(OrderedBits(got) - OrderedBits(want)) <= kUlpTolerance) return true;
  return std::fabs(got - want) <= kUlpTolerance * std::ldexp(1.0f, -24);
}

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

enum class Check { kExact, kBits, kClose };

struct Tally {
  int exact_ints = 0;
  int bit_exact_floats = 0;
  int close_floats = 0;  // within tolerance, not bit-exact
  int mismatches = 0;
};

// One stateful builtin: the values of one call, appended to `out`.
using StreamCall = void (*)(uint32& state, const std::vector<double>& args, std::vector<double>* out);

struct StreamBuiltin {
  int values_per_call;
  Check check;
  StreamCall call;
};

void Push2(const vec2f& v, std::vector<double>* out) {
  out->insert(out->end(), {v.c[0], v.c[1]});
}
void Push3(const vec3f& v, std::vector<double>* out) {
  out->insert(out->end(), {v.c[0], v.c[1], v.c[2]});
}

const std::map<std::string, StreamBuiltin>& StreamBuiltins() {
  static const auto* table = new std::map<std::string, StreamBuiltin>{
      {"randi", {1, Check::kExact, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
                   o->push_back(wp::randi(s));
                 }}},
      {"randu", {1, Check::kExact, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
                   o->push_back(wp::randu(s));
                 }}},
      {"randf", {1, Check::kBits, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
                   o->push_back(wp::randf(s));
                 }}},
      {"randn", {1, Check::kClose, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
                   o->push_back(wp::randn(s));
                 }}},
      {"randi_range", {1, Check::kExact, [](uint32& s, const std::vector<double>& a, std::vector<double>* o) {
                         o->push_back(wp::randi(s, (int32)a[0], (int32)a[1]));
                       }}},
      {"randu_range", {1, Check::kExact, [](uint32& s, const std::vector<double>& a, std::vector<double>* o) {
                         o->push_back(wp::randu(s, (uint32)a[0], (uint32)a[1]));
                       }}},
      {"randf_range", {1, Check::kBits, [](uint32& s, const std::vector<double>& a, std::vector<double>* o) {
                         o->push_back(wp::randf(s, (float)a[0], (float)a[1]));
                       }}},
      {"sample_cdf", {1, Check::kExact, [](uint32& s, const std::vector<double>& a, std::vector<double>* o) {
                        std::vector<float> cdf(a.begin(), a.end());
                        wp::array_t<float32> arr{};
                        arr.data = cdf.data();
                        arr.shape[0] = (int32)cdf.size();
                        arr.ndim = 1;
                        arr.strides[0] = sizeof(float);
                        o->push_back(wp::sample_cdf(s, arr));
                      }}},
      {"poisson", {1, Check::kExact, [](uint32& s, const std::vector<double>& a, std::vector<double>* o) {
                     o->push_back(wp::poisson(s, (float)a[0]));
                   }}},
      {"sample_triangle", {2, Check::kBits, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
                             Push2(wp::sample_triangle(s), o);
                           }}},
      {"sample_unit_ring", {2, Check::kClose, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
                              Push2(wp::sample_unit_ring(s), o);
                            }}},
      {"sample_unit_disk", {2, Check::kClose, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
                              Push2(wp::sample_unit_disk(s), o);
                            }}},
      {"sample_unit_sphere_surface",
       {3, Check::kClose, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
          Push3(wp::sample_unit_sphere_surface(s), o);
        }}},
      {"sample_unit_sphere", {3, Check::kClose, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
                                Push3(wp::sample_unit_sphere(s), o);
                              }}},
      {"sample_unit_hemisphere_surface",
       {3, Check::kClose, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
          Push3(wp::sample_unit_hemisphere_surface(s), o);
        }}},
      {"sample_unit_hemisphere",
       {3, Check::kClose, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
          Push3(wp::sample_unit_hemisphere(s), o);
        }}},
      {"sample_unit_square", {2, Check::kBits, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
                                Push2(wp::sample_unit_square(s), o);
                              }}},
      {"sample_unit_cube", {3, Check::kBits, [](uint32& s, const std::vector<double>&, std::vector<double>* o) {
                              Push3(wp::sample_unit_cube(s), o);
                            }}},
  };
  return *table;
}

// The stateless builtins: noiseN, pnoiseN, curlnoiseN (N = dimension). All are
// IEEE arithmetic and sqrt only, so they are checked bit for bit.
bool EvalStateless(const std::string& fn, const std::vector<double>& in, std::vector<double>* out) {
  auto f = [&](size_t i) { return (float)in[i]; };
  auto i32 = [&](size_t i) { return (int32)in[i]; };
  const uint32 state = (uint32)(long long)in[0];
  if (fn == "noise1") {
    out->push_back(wp::noise(state, f(1)));
  } else if (fn == "noise2") {
    out->push_back(wp::noise(state, vec2f{{f(1), f(2)}}));
  } else if (fn == "noise3") {
    out->push_back(wp::noise(state, vec3f{{f(1), f(2), f(3)}}));
  } else if (fn == "noise4") {
    out->push_back(wp::noise(state, vec4f{{f(1), f(2), f(3), f(4)}}));
  } else if (fn == "pnoise1") {
    out->push_back(wp::pnoise(state, f(1), i32(2)));
  } else if (fn == "pnoise2") {
    out->push_back(wp::pnoise(state, vec2f{{f(1), f(2)}}, i32(3), i32(4)));
  } else if (fn == "pnoise3") {
    out->push_back(wp::pnoise(state, vec3f{{f(1), f(2), f(3)}}, i32(4), i32(5), i32(6)));
  } else if (fn == "pnoise4") {
    out->push_back(
        wp::pnoise(state, vec4f{{f(1), f(2), f(3), f(4)}}, i32(5), i32(6), i32(7), i32(8)));
  } else if (fn == "curlnoise2") {
    Push2(wp::curlnoise(state, vec2f{{f(1), f(2)}}, (uint32)in[3], f(4), f(5)), out);
  } else if (fn == "curlnoise3") {
    Push3(wp::curlnoise(state, vec3f{{f(1), f(2), f(3)}}, (uint32)in[4], f(5), f(6)), out);
  } else if (fn == "curlnoise4") {
    Push3(wp::curlnoise(state, vec4f{{f(1), f(2), f(3), f(4)}}, (uint32)in[5], f(6), f(7)), out);
  } else {
    return false;
  }
  return true;
}

std::string Describe(const std::string& fn, const std::vector<double>& in) {
  std::ostringstream s;
  s.precision(9);
  s << fn << "(";
  for (size_t i = 0; i < in.size(); ++i) s << (i ? ", " : "") << in[i];
  s << ")";
  return s.str();
}

void Compare(Check check, double got, double want, size_t index, const std::string& what, Tally* t) {
  if (check == Check::kExact) {
    if (got == want) {
      ++t->exact_ints;
      return;
    }
    ++t->mismatches;
    ADD_FAILURE() << what << " value " << index << ": got " << (long long)got << ", Warp gave "
                  << (long long)want;
    return;
  }
  float g = (float)got, w = (float)want;
  if (SameBits(g, w)) {
    ++t->bit_exact_floats;
    return;
  }
  if (check == Check::kClose && FloatsClose(g, w)) {
    ++t->close_floats;
    return;
  }
  ++t->mismatches;
  ADD_FAILURE() << what << " value " << index << ": got " << std::hexfloat << g << ", Warp gave " << w
                << std::defaultfloat << " (" << g << " vs " << w << ", "
                << (check == Check::kBits ? "bit-exact" : "close") << " check)";
}

std::vector<double> Numbers(const Json& j) {
  std::vector<double> out;
  for (const Json& item : j.items) out.push_back(item.Double());
  return out;
}

TEST(RandReferenceTest, MatchesWarp) {
  const std::string path = std::string(WARPD_FIXTURES_DIR) + "/warp_random_reference.json";
  std::ifstream file(path, std::ios::binary);
  ASSERT_TRUE(file) << "cannot read " << path;
  std::stringstream ss;
  ss << file.rdbuf();
  const std::string text = ss.str();
  Json doc;
  std::string error;
  ASSERT_TRUE(JsonReader(text).Parse(&doc, &error)) << path << ": " << error;
  const Json* cases = doc.Find("cases");
  const Json* calls_json = doc.Find("calls_per_stream");
  ASSERT_TRUE(cases != nullptr && calls_json != nullptr) << path << " lacks cases or calls_per_stream";
  const int calls = (int)calls_json->Int();

  Tally tally;
  std::set<std::string> seen;
  for (const Json& c : cases->items) {
    const Json* fn_json = c.Find("fn");
    const Json* in_json = c.Find("in");
    const Json* out_json = c.Find("out");
    ASSERT_TRUE(fn_json && in_json && out_json);
    const std::string& fn = fn_json->text;
    const std::vector<double> in = Numbers(*in_json);
    const std::vector<double> want = Numbers(*out_json);
    const std::string what = Describe(fn, in);
    seen.insert(fn);

    std::vector<double> got;
    Check check = Check::kBits;
    size_t state_index = want.size();  // index of the final state in `want`, if any
    if (fn == "rand_init1") {
      got.push_back(wp::rand_init((int32)in[0]));
      check = Check::kExact;
    } else if (fn == "rand_init2") {
      got.push_back(wp::rand_init((int32)in[0], (int32)in[1]));
      check = Check::kExact;
    } else if (StreamBuiltins().count(fn) != 0) {
      const StreamBuiltin& b = StreamBuiltins().at(fn);
      const std::vector<double> args(in.begin() + 2, in.end());
      uint32 state = wp::rand_init((int32)in[0], (int32)in[1]);
      for (int k = 0; k < calls; ++k) b.call(state, args, &got);
      got.push_back(state);
      check = b.check;
      state_index = want.size() - 1;
      ASSERT_EQ(want.size(), (size_t)(calls * b.values_per_call + 1)) << what;
    } else {
      ASSERT_TRUE(EvalStateless(fn, in, &got)) << "unknown builtin in the fixture: " << fn;
    }
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t i = 0; i < want.size(); ++i) {
      Compare(i == state_index ? Check::kExact : check, got[i], want[i], i, what, &tally);
    }
  }

  // Every builtin and overload of Warp's "Random" group is in the fixture.
  for (const char* fn :
       {"rand_init1", "rand_init2", "randi", "randi_range", "randu", "randu_range", "randf",
        "randf_range", "randn", "sample_cdf", "sample_triangle", "sample_unit_ring", "sample_unit_disk",
        "sample_unit_sphere_surface", "sample_unit_sphere", "sample_unit_hemisphere_surface",
        "sample_unit_hemisphere", "sample_unit_square", "sample_unit_cube", "poisson", "noise1",
        "noise2", "noise3", "noise4", "pnoise1", "pnoise2", "pnoise3", "pnoise4", "curlnoise2",
        "curlnoise3", "curlnoise4"}) {
    EXPECT_EQ(seen.count(fn), 1u) << fn << " is missing from " << path;
  }
  std::printf("[ reference] %zu cases: %d integers exact, %d floats bit-exact, %d floats within %d ulp, "
              "%d mismatches\n",
              cases->items.size(), tally.exact_ints, tally.bit_exact_floats, tally.close_floats,
              kUlpTolerance, tally.mismatches);
}

// --- 2. Properties independent of the reference ------------------------------

struct Moments {
  double n = 0, sum = 0, sum2 = 0, sum3 = 0, sum4 = 0;
  void Add(double x) {
    n += 1;
    sum += x;
    sum2 += x * x;
    sum3 += x * x * x;
    sum4 += x * x * x * x;
  }
  double Mean() const { return sum / n; }
  double Variance() const { return sum2 / n - Mean() * Mean(); }
  double Skewness() const {
    double m = Mean(), v = Variance();
    return (sum3 / n - 3 * m * sum2 / n + 2 * m * m * m) / std::pow(v, 1.5);
  }
  double Kurtosis() const {
    double m = Mean(), v = Variance();
    return (sum4 / n - 4 * m * sum3 / n + 6 * m * m * sum2 / n - 3 * m * m * m * m) / (v * v);
  }
};

constexpr int kSamples = 200000;

TEST(RandTest, RandInitDependsOnSeedAndOffset) {
  EXPECT_NE(wp::rand_init(1), wp::rand_init(2));
  EXPECT_NE(wp::rand_init(1, 0), wp::rand_init(1, 1));
  EXPECT_NE(wp::rand_init(1, 0), wp::rand_init(2, 0));
  // No collisions among the states of neighbouring offsets (the hash is a
  // bijection, so distinct seeds + hash(offset) sums cannot collide either).
  std::set<uint32> states;
  for (int32 i = 0; i < 10000; ++i) states.insert(wp::rand_init(42, i));
  EXPECT_EQ(states.size(), 10000u);
}

TEST(RandTest, RandfIsUniformOnTheUnitInterval) {
  uint32 s = wp::rand_init(12345);
  Moments m;
  int bins[16] = {};
  for (int i = 0; i < kSamples; ++i) {
    float u = wp::randf(s);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ASSERT_EQ(u * 16777216.0f, std::floor(u * 16777216.0f)) << "not a multiple of 2^-24: " << u;
    m.Add(u);
    ++bins[(int)(u * 16)];
  }
  EXPECT_NEAR(m.Mean(), 0.5, 0.003);
  EXPECT_NEAR(m.Variance(), 1.0 / 12.0, 0.002);
  double chi2 = 0, expected = kSamples / 16.0;
  for (int b : bins) chi2 += (b - expected) * (b - expected) / expected;
  EXPECT_LT(chi2, 45.0);  // 15 degrees of freedom: p < 1e-4

  // The first value of many streams of one seed is uniform too.
  Moments first;
  for (int i = 0; i < kSamples; ++i) {
    uint32 t = wp::rand_init(7, i);
    first.Add(wp::randf(t));
  }
  EXPECT_NEAR(first.Mean(), 0.5, 0.003);
  EXPECT_NEAR(first.Variance(), 1.0 / 12.0, 0.002);
}

TEST(RandTest, RangesStayInRange) {
  uint32 s = wp::rand_init(99);
  int counts[10] = {};
  for (int i = 0; i < kSamples; ++i) {
    int32 r = wp::randi(s, -3, 7);
    ASSERT_GE(r, -3);
    ASSERT_LT(r, 7);
    ++counts[r + 3];
    uint32 u = wp::randu(s, 10u, 20u);
    ASSERT_GE(u, 10u);
    ASSERT_LT(u, 20u);
    float f = wp::randf(s, -2.0f, 6.0f);
    ASSERT_GE(f, -2.0f);
    ASSERT_LE(f, 6.0f);
  }
  for (int c : counts) EXPECT_NEAR(c, kSamples / 10.0, 5 * std::sqrt(kSamples / 10.0));
  // An empty range is defined (Warp divides by zero): it gives low.
  EXPECT_EQ(wp::randi(s, 5, 5), 5);
  EXPECT_EQ(wp::randu(s, 3u, 3u), 3u);
  EXPECT_EQ(wp::randi(s, INT32_MIN, INT32_MIN), INT32_MIN);
}

TEST(RandTest, EachCallAdvancesTheStateOnce) {
  uint32 s = wp::rand_init(5, 6);
  uint32 t = s;
  wp::randf(s);
  EXPECT_EQ(s, wp::randu(t));
  // randn draws two uniforms, sample_unit_sphere three, sample_unit_cube three.
  uint32 a = wp::rand_init(1), b = a;
  wp::randn(a);
  wp::randu(b);
  wp::randu(b);
  EXPECT_EQ(a, b);
  wp::sample_unit_sphere(a);
  for (int i = 0; i < 3; ++i) wp::randu(b);
  EXPECT_EQ(a, b);
}

TEST(RandTest, RandnIsStandardNormal) {
  uint32 s = wp::rand_init(2024);
  Moments m;
  int within_one_sigma = 0;
  for (int i = 0; i < kSamples; ++i) {
    float x = wp::randn(s);
    ASSERT_TRUE(std::isfinite(x));
    m.Add(x);
    within_one_sigma += std::fabs(x) < 1.0f;
  }
  EXPECT_NEAR(m.Mean(), 0.0, 0.01);
  EXPECT_NEAR(m.Variance(), 1.0, 0.015);
  EXPECT_NEAR(m.Skewness(), 0.0, 0.03);
  EXPECT_NEAR(m.Kurtosis(), 3.0, 0.06);
  EXPECT_NEAR(within_one_sigma / (double)kSamples, 0.682689, 0.005);
}

TEST(RandTest, PlanarSamplersCoverTheirShapes) {
  uint32 s = wp::rand_init(31337);
  Moments tri_u, tri_v, disk_x, square_x;
  int disk_inner = 0;
  for (int i = 0; i < kSamples; ++i) {
    vec2f t = wp::sample_triangle(s);
    ASSERT_GE(t.c[0], 0.0f);
    ASSERT_GE(t.c[1], 0.0f);
    ASSERT_LE(t.c[0] + t.c[1], 1.0f + 1e-6f);
    tri_u.Add(t.c[0]);
    tri_v.Add(t.c[1]);

    vec2f r = wp::sample_unit_ring(s);
    ASSERT_NEAR(std::hypot(r.c[0], r.c[1]), 1.0, 1e-6);

    vec2f d = wp::sample_unit_disk(s);
    double rd = std::hypot(d.c[0], d.c[1]);
    ASSERT_LE(rd, 1.0 + 1e-6);
    disk_inner += rd < 0.5;
    disk_x.Add(d.c[0]);

    vec2f q = wp::sample_unit_square(s);
    for (float c : q.c) {
      ASSERT_GE(c, -0.5f);
      ASSERT_LT(c, 0.5f);
    }
    square_x.Add(q.c[0]);
  }
  EXPECT_NEAR(tri_u.Mean(), 1.0 / 3.0, 0.003);
  EXPECT_NEAR(tri_v.Mean(), 1.0 / 3.0, 0.003);
  EXPECT_NEAR(disk_inner / (double)kSamples, 0.25, 0.005);  // area ratio
  EXPECT_NEAR(disk_x.Mean(), 0.0, 0.005);
  EXPECT_NEAR(square_x.Mean(), 0.0, 0.003);
  EXPECT_NEAR(square_x.Variance(), 1.0 / 12.0, 0.002);
}

TEST(RandTest, SolidSamplersCoverTheirShapes) {
  uint32 s = wp::rand_init(4242);
  Moments sphere_z, surface_z, hemi_z, cube_x;
  int ball_inner = 0, hemi_inner = 0, surface_cap = 0;
  for (int i = 0; i < kSamples; ++i) {
    vec3f p = wp::sample_unit_sphere_surface(s);
    ASSERT_NEAR(std::sqrt(p.c[0] * (double)p.c[0] + p.c[1] * (double)p.c[1] + p.c[2] * (double)p.c[2]), 1.0,
                2e-6);
    surface_z.Add(p.c[2]);
    surface_cap += p.c[2] > 0.5f;  // a cap of height 1/2: a quarter of the area

    vec3f b = wp::sample_unit_sphere(s);
    double rb = std::sqrt(b.c[0] * (double)b.c[0] + b.c[1] * (double)b.c[1] + b.c[2] * (double)b.c[2]);
    ASSERT_LE(rb, 1.0 + 2e-6);
    ball_inner += rb < 0.5;
    sphere_z.Add(b.c[2]);

    vec3f h = wp::sample_unit_hemisphere_surface(s);
    ASSERT_GE(h.c[2], 0.0f);
    ASSERT_NEAR(std::sqrt(h.c[0] * (double)h.c[0] + h.c[1] * (double)h.c[1] + h.c[2] * (double)h.c[2]), 1.0,
                2e-6);
    hemi_z.Add(h.c[2]);

    vec3f hb = wp::sample_unit_hemisphere(s);
    ASSERT_GE(hb.c[2], 0.0f);
    double rh = std::sqrt(hb.c[0] * (double)hb.c[0] + hb.c[1] * (double)hb.c[1] + hb.c[2] * (double)hb.c[2]);
    ASSERT_LE(rh, 1.0 + 2e-6);
    hemi_inner += rh < 0.5;

    vec3f c = wp::sample_unit_cube(s);
    for (float x : c.c) {
      ASSERT_GE(x, -0.5f);
      ASSERT_LT(x, 0.5f);
    }
    cube_x.Add(c.c[0]);
  }
  EXPECT_NEAR(surface_z.Mean(), 0.0, 0.005);
  EXPECT_NEAR(surface_z.Variance(), 1.0 / 3.0, 0.005);  // z uniform on [-1, 1]
  EXPECT_NEAR(surface_cap / (double)kSamples, 0.25, 0.005);
  EXPECT_NEAR(sphere_z.Mean(), 0.0, 0.005);
  EXPECT_NEAR(ball_inner / (double)kSamples, 0.125, 0.004);  // volume ratio
  EXPECT_NEAR(hemi_z.Mean(), 0.5, 0.005);                      // z uniform on [0, 1]
  EXPECT_NEAR(hemi_inner / (double)kSamples, 0.125, 0.004);
  EXPECT_NEAR(cube_x.Mean(), 0.0, 0.003);
}

wp::array_t<float32> Array1d(float* data, int32 n, int64_t stride_bytes) {
  wp::array_t<float32> a{};
  a.data = data;
  a.shape[0] = n;
  a.ndim = 1;
  a.strides[0] = stride_bytes;
  return a;
}

TEST(RandTest, SampleCdfFollowsTheDistribution) {
  std::vector<float> cdf = {0.1f, 0.3f, 0.3f, 0.75f, 1.0f};
  const double pdf[5] = {0.1, 0.2, 0.0, 0.45, 0.25};
  // The same cdf interleaved with poison values, read through a stride.
  std::vector<float> strided;
  for (float c : cdf) strided.insert(strided.end(), {c, -1e30f});
  wp::array_t<float32> a = Array1d(cdf.data(), 5, sizeof(float));
  wp::array_t<float32> b = Array1d(strided.data(), 5, 2 * sizeof(float));
  uint32 s = wp::rand_init(77), t = s;
  int counts[5] = {};
  for (int i = 0; i < kSamples; ++i) {
    int32 k = wp::sample_cdf(s, a);
    ASSERT_GE(k, 0);
    ASSERT_LT(k, 5);
    ASSERT_EQ(wp::sample_cdf(t, b), k);
    ++counts[k];
  }
  for (int k = 0; k < 5; ++k) EXPECT_NEAR(counts[k] / (double)kSamples, pdf[k], 0.005) << k;
  EXPECT_EQ(counts[2], 0);  // a zero-width bin is never chosen

  // Empty and one-element arrays: no read out of bounds (data is null here).
  EXPECT_EQ(wp::sample_cdf(s, Array1d(nullptr, 0, 4)), 0);
  float one = 1.0f;
  EXPECT_EQ(wp::sample_cdf(s, Array1d(&one, 1, 4)), 0);
  // A cdf that never reaches u gives the last index.
  std::vector<float> low = {0.0f, 0.0f, 0.0f};
  EXPECT_EQ(wp::sample_cdf(s, Array1d(low.data(), 3, 4)), 2);
}

TEST(RandTest, PoissonHasMeanAndVarianceLambda) {
  // Both algorithms (multiplication below 10, transformed rejection above).
  for (float lam : {0.5f, 3.0f, 9.5f, 10.0f, 40.0f, 1000.0f, 123456.0f}) {
    uint32 s = wp::rand_init(lam * 100);
    Moments m;
    const int n = 100000;
    for (int i = 0; i < n; ++i) m.Add(wp::poisson(s, lam));
    EXPECT_NEAR(m.Mean(), lam, 5 * std::sqrt(lam / n)) << lam;
    EXPECT_NEAR(m.Variance() / lam, 1.0, 0.03) << lam;
  }
  // P(X = 0) = exp(-lam).
  uint32 s = wp::rand_init(3);
  int zeros = 0;
  for (int i = 0; i < kSamples; ++i) zeros += wp::poisson(s, 2.0f) == 0;
  EXPECT_NEAR(zeros / (double)kSamples, std::exp(-2.0), 0.003);
}

TEST(RandTest, PoissonIsDefinedEverywhere) {
  uint32 s = wp::rand_init(8);
  EXPECT_EQ(wp::poisson(s, 0.0f), 0u);
  EXPECT_EQ(wp::poisson(s, -0.0f), 0u);
  EXPECT_EQ(wp::poisson(s, -5.0f), 0u);
  EXPECT_EQ(wp::poisson(s, std::numeric_limits<float>::quiet_NaN()), 0u);
  EXPECT_EQ(wp::poisson(s, -std::numeric_limits<float>::infinity()), 0u);
  // Beyond uint32: saturates (Warp's float-to-uint32 conversion is undefined).
  EXPECT_EQ(wp::poisson(s, 1e30f), 4294967295u);
  uint32 inf_result = wp::poisson(s, std::numeric_limits<float>::infinity());
  EXPECT_TRUE(inf_result == 0u || inf_result == 4294967295u) << inf_result;
  EXPECT_GT(wp::poisson(s, 1e9f), 900000000u);
}

// --- noise ---------------------------------------------------------------------

float Noise(uint32 s, const float* x, int n) {
  switch (n) {
    case 1:
      return wp::noise(s, x[0]);
    case 2:
      return wp::noise(s, vec2f{{x[0], x[1]}});
    case 3:
      return wp::noise(s, vec3f{{x[0], x[1], x[2]}});
    default:
      return wp::noise(s, vec4f{{x[0], x[1], x[2], x[3]}});
  }
}

float PNoise(uint32 s, const float* x, const int32* p, int n) {
  switch (n) {
    case 1:
      return wp::pnoise(s, x[0], p[0]);
    case 2:
      return wp::pnoise(s, vec2f{{x[0], x[1]}}, p[0], p[1]);
    case 3:
      return wp::pnoise(s, vec3f{{x[0], x[1], x[2]}}, p[0], p[1], p[2]);
    default:
      return wp::pnoise(s, vec4f{{x[0], x[1], x[2], x[3]}}, p[0], p[1], p[2], p[3]);
  }
}

TEST(NoiseTest, BoundedNonTrivialAndZeroOnTheLattice) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> coord(-50.0f, 50.0f);
  std::uniform_int_distribution<int> lattice(-1000, 1000);
  for (int n = 1; n <= 4; ++n) {
    const uint32 s = wp::rand_init(n);
    Moments m;
    for (int i = 0; i < 20000; ++i) {
      float x[4] = {coord(rng), coord(rng), coord(rng), coord(rng)};
      float v = Noise(s, x, n);
      ASSERT_LE(std::fabs(v), std::sqrt((float)n) / 2 + 1e-6f) << n;
      m.Add(v);
      float k[4] = {(float)lattice(rng), (float)lattice(rng), (float)lattice(rng), (float)lattice(rng)};
      ASSERT_EQ(Noise(s, k, n), 0.0f) << n;
    }
    EXPECT_NEAR(m.Mean(), 0.0, 0.02) << n;
    EXPECT_GT(m.Variance(), 0.005) << n;
    // Another state is another field.
    float x[4] = {0.3f, 1.7f, -2.2f, 4.1f};
    EXPECT_NE(Noise(s, x, n), Noise(s + 1, x, n)) << n;
  }
}

TEST(NoiseTest, IsContinuous) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> coord(-20.0f, 20.0f);
  const float h = 1.0f / 1024;  // exact steps, so x + h is x moved by h
  for (int n = 1; n <= 4; ++n) {
    const uint32 s = wp::rand_init(10 + n);
    for (int i = 0; i < 5000; ++i) {
      float x[4];
      for (float& c : x) c = std::round(coord(rng) * 1024) / 1024;
      // Across a cell boundary half the time.
      if (i % 2 == 0) x[i % n] = std::round(x[i % n]) - h / 2;
      float v = Noise(s, x, n);
      for (int k = 0; k < n; ++k) {
        float y[4] = {x[0], x[1], x[2], x[3]};
        y[k] += h;
        // The gradient of quintic-faded Perlin noise is below 2 * sqrt(n)
        // (each corner term's gradient is at most |g| + |d| fade' <= 1 + 1.875 sqrt(n)).
        ASSERT_LE(std::fabs(Noise(s, y, n) - v), 4.0f * n * h) << n << " " << k;
      }
    }
  }
}

TEST(NoiseTest, PNoiseRepeatsWithItsPeriod) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> sixteenths(0, 64 * 16);
  const int32 periods[4] = {3, 5, 1, 8};
  for (int n = 1; n <= 4; ++n) {
    const uint32 s = wp::rand_init(20 + n);
    for (int i = 0; i < 2000; ++i) {
      float x[4];
      for (float& c : x) c = sixteenths(rng) / 16.0f;  // exact, so x + p is exact
      float v = PNoise(s, x, periods, n);
      ASSERT_LE(std::fabs(v), std::sqrt((float)n) / 2 + 1e-6f);
      for (int k = 0; k < n; ++k) {
        float y[4] = {x[0], x[1], x[2], x[3]};
        y[k] += periods[k] * (1 + i % 3);
        ASSERT_TRUE(SameBits(PNoise(s, y, periods, n), v)) << n << " axis " << k;
      }
      // A period larger than the coordinates: plain noise.
      const int32 big[4] = {1000, 1000, 1000, 1000};
      ASSERT_TRUE(SameBits(PNoise(s, x, big, n), Noise(s, x, n))) << n;
    }
  }
}

TEST(NoiseTest, DefinedForAnyInput) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const int32 zero[4] = {0, 0, 0, 0};
  const int32 negative[4] = {-3, -3, -3, -3};
  const int32 extreme[4] = {INT32_MIN, -1, INT32_MAX, 1};
  for (int n = 1; n <= 4; ++n) {
    for (float c : {nan, inf, -inf, 3e9f, -3e9f, 1e30f}) {
      float x[4] = {c, c, c, c};
      Noise(1, x, n);  // any value; it must return
      PNoise(1, x, zero, n);
      PNoise(1, x, extreme, n);
    }
    float x[4] = {1.25f, -2.5f, 7.75f, 0.5f};
    EXPECT_TRUE(std::isfinite(PNoise(1, x, zero, n))) << n;
    EXPECT_TRUE(std::isfinite(PNoise(1, x, negative, n))) << n;
    EXPECT_TRUE(std::isfinite(PNoise(1, x, extreme, n))) << n;
  }
  vec3f c = wp::curlnoise(5, vec3f{{nan, 1, 2}}, 2, 2.0f, 0.5f);
  (void)c;
}

// --- curlnoise -------------------------------------------------------------------

// Central difference of noise along axis k, in double.
template <typename V>
double Derivative(uint32 s, V x, int k, float h) {
  V a = x, b = x;
  a.c[k] += h;
  b.c[k] -= h;
  return ((double)wp::noise(s, a) - (double)wp::noise(s, b)) / (a.c[k] - b.c[k]);
}

uint32 NextPotentialState(uint32 s, int field) {
  return wp::rand_init((int32)s, field == 1 ? 10019689 : 13112221);
}

TEST(CurlNoiseTest, TwoDimensionalIsTheRotatedNoiseGradient) {
  std::mt19937 rng(4);
  std::uniform_real_distribution<float> coord(-10.0f, 10.0f);
  const float h = 1.0f / 512;
  for (int i = 0; i < 500; ++i) {
    const uint32 s = wp::rand_init(i);
    vec2f x{{coord(rng), coord(rng)}};
    vec2f c = wp::curlnoise(s, x, 1, 2.0f, 0.5f);
    EXPECT_NEAR(c.c[0], -Derivative(s, x, 1, h), 2e-3);
    EXPECT_NEAR(c.c[1], Derivative(s, x, 0, h), 2e-3);
  }
}

template <typename V>
void ExpectCurlOfPotentials(uint32 s, const V& x, const vec3f& c) {
  const float h = 1.0f / 512;
  const uint32 s1 = s, s2 = NextPotentialState(s1, 1), s3 = NextPotentialState(s2, 2);
  EXPECT_NEAR(c.c[0], Derivative(s3, x, 1, h) - Derivative(s2, x, 2, h), 3e-3);
  EXPECT_NEAR(c.c[1], Derivative(s1, x, 2, h) - Derivative(s3, x, 0, h), 3e-3);
  EXPECT_NEAR(c.c[2], Derivative(s2, x, 0, h) - Derivative(s1, x, 1, h), 3e-3);
}

TEST(CurlNoiseTest, ThreeAndFourDimensionalAreCurlsOfThreeNoiseFields) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> coord(-10.0f, 10.0f);
  for (int i = 0; i < 300; ++i) {
    const uint32 s = wp::rand_init(1000 + i);
    vec3f x{{coord(rng), coord(rng), coord(rng)}};
    ExpectCurlOfPotentials(s, x, wp::curlnoise(s, x, 1, 2.0f, 0.5f));
    vec4f y{{coord(rng), coord(rng), coord(rng), coord(rng)}};
    ExpectCurlOfPotentials(s, y, wp::curlnoise(s, y, 1, 2.0f, 0.5f));
  }
}

TEST(CurlNoiseTest, OctavesAddScaledCurlsAndChainTheState) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<float> coord(-10.0f, 10.0f);
  for (int i = 0; i < 300; ++i) {
    const uint32 s = wp::rand_init(2000 + i);
    vec3f x{{coord(rng), coord(rng), coord(rng)}};
    vec3f x2{{2.0f * x.c[0], 2.0f * x.c[1], 2.0f * x.c[2]}};
    // Octave 2 is sampled at 2x, weighted by the gain, with the state after
    // octave 1's two rand_init steps.
    const uint32 s_next = NextPotentialState(NextPotentialState(s, 1), 2);
    vec3f both = wp::curlnoise(s, x, 2, 2.0f, 0.5f);
    vec3f first = wp::curlnoise(s, x, 1, 2.0f, 0.5f);
    vec3f second = wp::curlnoise(s_next, x2, 1, 2.0f, 0.5f);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(both.c[k], first.c[k] + 0.5f * second.c[k], 2e-6) << k;

    vec2f y{{x.c[0], x.c[1]}};
    vec2f both2 = wp::curlnoise(s, y, 2, 3.0f, 0.25f);
    vec2f first2 = wp::curlnoise(s, y, 1, 3.0f, 0.25f);
    vec2f second2 = wp::curlnoise(s, vec2f{{3.0f * y.c[0], 3.0f * y.c[1]}}, 1, 3.0f, 0.25f);
    for (int k = 0; k < 2; ++k) EXPECT_NEAR(both2.c[k], first2.c[k] + 0.25f * second2.c[k], 2e-6) << k;
  }
  // No octaves: zero.
  vec3f z = wp::curlnoise(1, vec3f{{0.5f, 0.5f, 0.5f}}, 0, 2.0f, 0.5f);
  for (float c : z.c) EXPECT_EQ(c, 0.0f);
}

TEST(CurlNoiseTest, IsDivergenceFree) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> coord(-10.0f, 10.0f);
  const float h = 1.0f / 256;
  for (int i = 0; i < 300; ++i) {
    const uint32 s = wp::rand_init(3000 + i);
    vec3f x{{coord(rng), coord(rng), coord(rng)}};
    double div = 0;
    for (int k = 0; k < 3; ++k) {
      vec3f a = x, b = x;
      a.c[k] += h;
      b.c[k] -= h;
      div += ((double)wp::curlnoise(s, a, 3, 2.0f, 0.5f).c[k] - wp::curlnoise(s, b, 3, 2.0f, 0.5f).c[k]) /
             (a.c[k] - b.c[k]);
    }
    EXPECT_NEAR(div, 0.0, 0.05);
  }
}

}  // namespace
