#include "runtime/exec/kernel_output.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "warpd/native/print.h"

namespace warpd::runtime {
namespace {

using abi::PrintConversion;
using types::ScalarKind;
using types::TypeRef;

// snprintf into a string; `spec` is built by this file only.
template <typename T>
std::string Printf(const std::string& spec, T value) {
  char small[64];
  const int n = std::snprintf(small, sizeof small, spec.c_str(), value);
  if (n < 0) return "";
  if (static_cast<size_t>(n) < sizeof small) return std::string(small, n);
  std::string out(static_cast<size_t>(n) + 1, '\0');
  std::snprintf(out.data(), out.size(), spec.c_str(), value);
  out.resize(static_cast<size_t>(n));
  return out;
}

struct Scalar {
  bool is_float = false;
  bool is_signed = false;
  int bits = 0;
  double f = 0;
  uint64_t u = 0;  // integers: the value's bits, sign-extended to 64 when signed
};

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

Scalar Read(ScalarKind k, const uint8_t* p) {
  Scalar s;
  s.bits = static_cast<int>(types::ScalarSize(k)) * 8;
  s.is_signed = types::IsSigned(k);
  switch (k) {
    case ScalarKind::kBool: s.u = Load<uint8_t>(p) != 0; break;
    case ScalarKind::kInt8: s.u = static_cast<uint64_t>(static_cast<int64_t>(Load<int8_t>(p))); break;
    case ScalarKind::kUInt8: s.u = Load<uint8_t>(p); break;
    case ScalarKind::kInt16: s.u = static_cast<uint64_t>(static_cast<int64_t>(Load<int16_t>(p))); break;
    case ScalarKind::kUInt16: s.u = Load<uint16_t>(p); break;
    case ScalarKind::kInt32: s.u = static_cast<uint64_t>(static_cast<int64_t>(Load<int32_t>(p))); break;
    case ScalarKind::kUInt32: s.u = Load<uint32_t>(p); break;
    case ScalarKind::kInt64: s.u = static_cast<uint64_t>(Load<int64_t>(p)); break;
    case ScalarKind::kUInt64: s.u = Load<uint64_t>(p); break;
    case ScalarKind::kFloat16:
      s.is_float = true;
      s.f = wp::half_to_float(wp::half{Load<uint16_t>(p)});
      break;
    case ScalarKind::kBFloat16:
      s.is_float = true;
      s.f = wp::bfloat16_to_float(wp::bfloat16{Load<uint16_t>(p)});
      break;
    case ScalarKind::kFloat32: s.is_float = true; s.f = Load<float>(p); break;
    case ScalarKind::kFloat64: s.is_float = true; s.f = Load<double>(p); break;
  }
  return s;
}

// A scalar as Warp's print() shows it.
std::string WarpScalar(ScalarKind k, const uint8_t* p) {
  const Scalar s = Read(k, p);
  if (k == ScalarKind::kBool) return s.u ? "True" : "False";
  if (s.is_float) return Printf("%g", s.f);
  if (s.is_signed) return Printf("%lld", static_cast<long long>(s.u));
  return Printf("%llu", static_cast<unsigned long long>(s.u));
}

// A scalar by a printf conversion checked at compile time (printf_format.h).
std::string Converted(ScalarKind k, const uint8_t* p, const PrintConversion& c) {
  const Scalar s = Read(k, p);
  std::string spec = "%";
  for (char f : c.flags)
    if (std::strchr("-+ #0", f) != nullptr) spec += f;
  if (c.width >= 0 && c.width <= abi::kMaxPrintfWidth) absl::StrAppend(&spec, c.width);
  if (c.precision >= 0 && c.precision <= abi::kMaxPrintfWidth) absl::StrAppend(&spec, ".", c.precision);
  if (std::strchr("fFeEgGaA", c.conv) != nullptr && c.conv != '\0') {
    if (!s.is_float) return "?";
    return Printf(spec + c.conv, s.f);
  }
  if (std::strchr("diuoxXc", c.conv) == nullptr || c.conv == '\0' || s.is_float) return "?";
  // C's promotion: small integers become 32-bit; a length modifier narrows.
  const int bits = c.int_bits > 0 && c.int_bits <= 64 ? c.int_bits : std::max(32, s.bits);
  const uint64_t mask = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
  if (c.conv == 'c') return Printf(spec + 'c', static_cast<int>(static_cast<unsigned char>(s.u)));
  if (c.conv == 'd' || c.conv == 'i') {
    // The low `bits` bits as a signed number.
    const uint64_t low = s.u & mask;
    const uint64_t sign = bits >= 64 ? 0 : uint64_t{1} << (bits - 1);
    const int64_t v = bits >= 64 ? static_cast<int64_t>(low)
                                 : static_cast<int64_t>((low ^ sign)) - static_cast<int64_t>(sign);
    return Printf(spec + "ll" + c.conv, static_cast<long long>(v));
  }
  return Printf(spec + "ll" + c.conv, static_cast<unsigned long long>(s.u & mask));
}

std::string Components(ScalarKind k, const uint8_t* p, int n, const char* sep, bool trailing) {
  const size_t size = types::ScalarSize(k);
  std::string out;
  for (int i = 0; i < n; ++i) {
    out += WarpScalar(k, p + i * size);
    if (trailing || i + 1 < n) out += sep;
  }
  return out;
}

// A value after the "adj:" of Warp's adj_print(): each component after a
// space, matrix rows after the first on lines indented by four, a
// transform's parts in parentheses.
std::string AdjointValue(TypeRef t, const uint8_t* p) {
  if (t->is_scalar()) return " " + WarpScalar(t->scalar(), p);
  const ScalarKind k = t->scalar();
  const size_t size = types::ScalarSize(k);
  switch (t->kind()) {
    case types::Kind::kVector:
      return " " + Components(k, p, t->length(), " ", false);
    case types::Kind::kMatrix: {
      std::string out;
      for (int r = 0; r < t->rows(); ++r) {
        if (r > 0) out += "\n    ";
        out += " " + Components(k, p + r * t->cols() * size, t->cols(), " ", false);
      }
      return out;
    }
    case types::Kind::kQuat:
      return " " + Components(k, p, 4, " ", false);
    case types::Kind::kTransform:
      return " (" + Components(k, p, 3, " ", false) + ") (" + Components(k, p + 3 * size, 4, " ", false) + ")";
    default:
      return " <type without print implementation>";
  }
}

}  // namespace

std::string FormatPrintValue(TypeRef t, const uint8_t* p, const PrintConversion& c) {
  if (c.adjoint && c.conv == 0) return AdjointValue(t, p);
  if (t->is_scalar()) return c.conv == 0 ? WarpScalar(t->scalar(), p) : Converted(t->scalar(), p, c);
  const ScalarKind k = t->scalar();
  const size_t size = types::ScalarSize(k);
  switch (t->kind()) {
    case types::Kind::kVector:
      return Components(k, p, t->length(), " ", true);
    case types::Kind::kMatrix: {
      std::string out;
      for (int r = 0; r < t->rows(); ++r) {
        if (r > 0) out += "\n";
        out += Components(k, p + r * t->cols() * size, t->cols(), " ", true);
      }
      return out;
    }
    case types::Kind::kQuat:
      return Components(k, p, 4, " ", false);
    case types::Kind::kTransform:
      return "(" + Components(k, p, 3, " ", false) + ") (" + Components(k, p + 3 * size, 4, " ", false) + ")";
    default:
      return "<type without print implementation>";
  }
}

std::string FormatKernelOutput(const abi::PrintTable& table, const uint8_t* data, uint64_t committed,
                               uint64_t dropped, std::string_view kernel) {
  struct Record {
    int64_t tid;
    uint64_t offset;
    uint32_t site;
  };
  std::vector<Record> records;
  bool malformed = false;
  const uint64_t header = sizeof(wp::print_record_header);
  for (uint64_t at = 0; at < committed;) {
    if (committed - at < header) {
      malformed = true;
      break;
    }
    wp::print_record_header h;
    std::memcpy(&h, data + at, sizeof h);
    if (h.site >= table.sites.size() || h.size != wp::print_record_size(table.sites[h.site].payload) ||
        h.size > committed - at) {
      malformed = true;
      break;
    }
    records.push_back({h.tid, at + header, h.site});
    at += h.size;
  }
  // Thread order, like Warp's CPU launches; a thread's own records keep the
  // order it wrote them in.
  std::stable_sort(records.begin(), records.end(), [](const Record& a, const Record& b) { return a.tid < b.tid; });
  std::string out;
  uint64_t over = 0;
  for (const Record& r : records) {
    if (over > 0) {
      ++over;
      continue;
    }
    const abi::PrintSite& site = table.sites[r.site];
    std::string text;
    for (const abi::PrintSegment& s : site.segments) {
      if (s.type == nullptr) {
        text += s.text;
      } else if (uint64_t{s.offset} + abi::PrintValueSize(s.type) <= site.payload) {
        text += FormatPrintValue(s.type, data + r.offset + s.offset, s.conversion);
      }
    }
    if (out.size() + text.size() > kMaxLaunchOutput) {
      over = 1;
      continue;
    }
    out += text;
  }
  const absl::string_view name(kernel.data(), kernel.size());
  if (dropped + over > 0) {
    absl::StrAppend(&out, "[warpd: kernel '", name, "' printed too much in one launch: ", dropped + over,
                    " print call", dropped + over == 1 ? "" : "s", " dropped (limit: ", kMaxLaunchOutput,
                    " bytes of text, ", kOutputRecordBytes, " bytes of records)]\n");
  }
  if (malformed) {
    absl::StrAppend(&out, "[warpd: kernel '", name,
                    "' wrote a malformed output record; the rest of this launch's output is lost]\n");
  }
  return out;
}

}  // namespace warpd::runtime
