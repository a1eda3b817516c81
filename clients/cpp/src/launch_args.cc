// Launch arguments: checked against the kernel's parameters (KernelInfo from
// LoadModule) and packed as the daemon expects them (docs/launch_abi.md):
// arrays by handle, scalars little-endian in the parameter's type, other
// values as their C layout's bytes.
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "client_impl.h"

namespace warpd::internal {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// IEEE binary16, rounded to nearest even.
uint16_t ToHalf(float f) {
  uint32_t x = FloatBits(f);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t man = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (man ? 0x200u : 0u));
  int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return sign;
    man |= 0x800000u;
    int shift = 14 - e;
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (man >> 13);
  uint32_t rem = man & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(sign | half);
}

uint16_t ToBFloat16(float f) {
  uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN stays NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

template <class T>
std::string Bytes(T v) {
  std::string b(sizeof(T), '\0');
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

template <class T>
absl::StatusOr<std::string> IntBytes(int64_t v, bool is_unsigned_source, uint64_t u) {
  if (is_unsigned_source) {
    if (u > static_cast<uint64_t>(std::numeric_limits<T>::max())) return absl::OutOfRangeError("out of range");
    return Bytes(static_cast<T>(u));
  }
  if constexpr (std::is_unsigned_v<T>) {
    if (v < 0 || static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
      return absl::OutOfRangeError("out of range");
    }
  } else {
    if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      return absl::OutOfRangeError("out of range");
    }
  }
  return Bytes(static_cast<T>(v));
}

std::string TypeText(const v1::TypeRef& t) { return t.ShortDebugString(); }

}  // namespace

absl::Status Impl::PackArg(const v1::ParamInfo& p, const Arg& arg, const std::string& device,
                           v1::LaunchArg* out) const {
  const auto& v = arg.v_;
  const v1::TypeRef& type = p.type();
  auto bad = [&](std::string what) {
    return absl::InvalidArgumentError(absl::StrCat("parameter '", p.name(), "' (", TypeText(type), "): ", what));
  };
  if (type.has_array()) {
    if (std::holds_alternative<Arg::Null>(v)) {
      out->set_array(0);
      return absl::OkStatus();
    }
    const Array* a = std::get_if<Array>(&v);
    if (a == nullptr) return bad("expects an array");
    if (!a->valid()) return bad("an invalid (default-constructed) Array");
    if (type.array().indexed()) return bad("indexed arrays are not supported by the C++ client");
    if (a->state_->impl.lock().get() != this) return bad("an array of another client");
    if (a->device() != device) {
      return bad(absl::StrCat("the array is on device '", a->device(), "', the launch on '", device, "'"));
    }
    if (a->shape().size() != type.array().ndim()) {
      return bad(absl::StrCat("expects ", type.array().ndim(), " dimensions, the array has ", a->shape().size()));
    }
    if (a->dtype().SerializeAsString() != type.array().dtype().SerializeAsString()) {
      return bad(absl::StrCat("the array's dtype is ", TypeText(a->dtype())));
    }
    out->set_array(a->handle());
    return absl::OkStatus();
  }
  if (std::holds_alternative<Arg::Null>(v) || std::holds_alternative<Array>(v)) return bad("expects a value, not an array");
  std::string bytes;
  if (const auto* raw = std::get_if<Arg::Raw>(&v)) {
    bytes = raw->bytes;
  } else if (type.kind_case() != v1::TypeRef::kScalar) {
    return bad("expects the value's bytes (Arg::Value or Arg::Bytes), not a number");
  } else {
    double d = 0;
    int64_t i = 0;
    uint64_t u = 0;
    bool is_float = false, is_unsigned = false;
    if (const double* x = std::get_if<double>(&v)) {
      d = *x;
      is_float = true;
    } else if (const int64_t* x = std::get_if<int64_t>(&v)) {
      i = *x;
      d = static_cast<double>(*x);
    } else if (const auto* x = std::get_if<Arg::Unsigned>(&v)) {
      u = x->v;
      is_unsigned = true;
      d = static_cast<double>(x->v);
    } else if (const bool* x = std::get_if<bool>(&v)) {
      i = *x ? 1 : 0;
      d = static_cast<double>(i);
    }
    absl::StatusOr<std::string> packed;
    switch (type.scalar()) {
      case v1::SCALAR_FLOAT32: packed = Bytes(static_cast<float>(d)); break;
      case v1::SCALAR_FLOAT64: packed = Bytes(d); break;
      case v1::SCALAR_FLOAT16: packed = Bytes(ToHalf(static_cast<float>(d))); break;
      case v1::SCALAR_BFLOAT16: packed = Bytes(ToBFloat16(static_cast<float>(d))); break;
      case v1::SCALAR_BOOL:
        packed = Bytes(static_cast<uint8_t>(d != 0 ? 1 : 0));
        break;
      default:
        if (is_float) return bad("expects an integer, got a floating-point number");
        switch (type.scalar()) {
          case v1::SCALAR_INT8: packed = IntBytes<int8_t>(i, is_unsigned, u); break;
          case v1::SCALAR_UINT8: packed = IntBytes<uint8_t>(i, is_unsigned, u); break;
          case v1::SCALAR_INT16: packed = IntBytes<int16_t>(i, is_unsigned, u); break;
          case v1::SCALAR_UINT16: packed = IntBytes<uint16_t>(i, is_unsigned, u); break;
          case v1::SCALAR_INT32: packed = IntBytes<int32_t>(i, is_unsigned, u); break;
          case v1::SCALAR_UINT32: packed = IntBytes<uint32_t>(i, is_unsigned, u); break;
          case v1::SCALAR_INT64: packed = IntBytes<int64_t>(i, is_unsigned, u); break;
          case v1::SCALAR_UINT64:
            if (!is_unsigned && i < 0) return bad("a negative value for an unsigned parameter");
            packed = Bytes(is_unsigned ? u : static_cast<uint64_t>(i));
            break;
          default: return bad("unknown scalar type");
        }
    }
    if (!packed.ok()) return bad("the value is out of the parameter type's range");
    bytes = *std::move(packed);
  }
  if (bytes.size() != p.size()) {
    return bad(absl::StrCat("expects ", p.size(), " bytes, got ", bytes.size()));
  }
  out->set_bytes(std::move(bytes));
  return absl::OkStatus();
}

absl::StatusOr<v1::Launch> Impl::PackLaunch(const v1::KernelInfo& info, uint64_t module, const std::string& device,
                                            const std::vector<int64_t>& dim, const std::vector<Arg>& args) const {
  if (dim.empty() || dim.size() > 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("launch of kernel '", info.name(), "': dim must have 1 to 4 dimensions, got ", dim.size()));
  }
  for (int64_t d : dim) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat("launch of kernel '", info.name(), "': negative dim"));
  }
  if (args.size() != static_cast<size_t>(info.params_size())) {
    std::string names;
    for (const auto& p : info.params()) absl::StrAppend(&names, names.empty() ? "" : ", ", p.name());
    return absl::InvalidArgumentError(absl::StrCat("kernel '", info.name(), "' takes ", info.params_size(),
                                                   " arguments (", names, "), but ", args.size(), " were given"));
  }
  v1::Launch launch;
  launch.set_module(module);
  launch.set_kernel(info.name());
  for (int64_t d : dim) launch.add_dim(d);
  for (size_t k = 0; k < args.size(); ++k) {
    absl::Status st = PackArg(info.params(static_cast<int>(k)), args[k], device, launch.add_args());
    if (!st.ok()) {
      return absl::Status(st.code(), absl::StrCat("launch of kernel '", info.name(), "': ", st.message()));
    }
  }
  return launch;
}

void Impl::ArraysOf(const std::vector<Arg>& args, std::vector<Array>* out) {
  for (const Arg& a : args) {
    if (const Array* x = std::get_if<Array>(&a.v_)) out->push_back(*x);
  }
}

}  // namespace warpd::internal
