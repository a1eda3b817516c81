#include "compiler/builtins/printf_format.h"

#include <cstdio>

#include "common/str_cat.h"

namespace warpd::builtins {
namespace {

using abi::PrintConversion;
using abi::PrintSegment;

absl::Status Err(std::string_view msg) { return absl::InvalidArgumentError(Cat("printf(): ", msg)); }

// A byte of client text for a message: printable ASCII as is, else \xNN.
std::string Shown(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

std::string Ordinal(size_t n) {
  const char* suffix = "th";
  if (n % 100 < 11 || n % 100 > 13) {
    if (n % 10 == 1) suffix = "st";
    if (n % 10 == 2) suffix = "nd";
    if (n % 10 == 3) suffix = "rd";
  }
  return Cat(n, suffix);
}

void AppendText(std::vector<PrintSegment>& out, std::string_view text) {
  if (text.empty()) return;
  if (!out.empty() && out.back().type == nullptr) {
    out.back().text.append(text.data(), text.size());
    return;
  }
  PrintSegment s;
  s.text = std::string(text);
  out.push_back(std::move(s));
}

// "%-5.2s" of a string constant, done here: precision cuts, width pads.
std::string FormatString(const PrintConversion& c, const std::string& s) {
  std::string v = c.precision >= 0 && static_cast<size_t>(c.precision) < s.size() ? s.substr(0, c.precision) : s;
  if (c.width > 0 && v.size() < static_cast<size_t>(c.width)) {
    std::string pad(c.width - v.size(), ' ');
    v = c.flags.find('-') != std::string::npos ? v + pad : pad + v;
  }
  return v;
}

// Reads the decimal number at fmt[*i]; false when it exceeds kMaxPrintfWidth.
bool Number(std::string_view fmt, size_t* i, int32_t* out) {
  int64_t v = 0;
  for (; *i < fmt.size() && fmt[*i] >= '0' && fmt[*i] <= '9'; ++*i) {
    v = v * 10 + (fmt[*i] - '0');
    if (v > abi::kMaxPrintfWidth) v = abi::kMaxPrintfWidth + 1;  // no overflow on long digit runs
  }
  *out = static_cast<int32_t>(v);
  return v <= abi::kMaxPrintfWidth;
}

}  // namespace

absl::StatusOr<std::vector<PrintSegment>> PrintfSegments(std::string_view fmt, std::span<const PrintfArg> args) {
  std::vector<PrintSegment> out;
  size_t next_arg = 0;
  size_t conversions = 0;
  size_t i = 0;
  while (i < fmt.size()) {
    size_t pct = fmt.find('%', i);
    if (pct == std::string_view::npos) pct = fmt.size();
    AppendText(out, fmt.substr(i, pct - i));
    if (pct == fmt.size()) break;
    const size_t start = pct;
    i = pct + 1;
    if (i < fmt.size() && fmt[i] == '%') {
      AppendText(out, "%");
      ++i;
      continue;
    }
    PrintConversion c;
    // Flags, kept once each in a fixed order.
    bool seen[5] = {};
    static constexpr char kFlags[] = "-+ #0";
    for (; i < fmt.size(); ++i) {
      const char* f = nullptr;
      for (const char* p = kFlags; *p; ++p)
        if (*p == fmt[i]) f = p;
      if (f == nullptr) break;
      seen[f - kFlags] = true;
    }
    for (int k = 0; k < 5; ++k)
      if (seen[k]) c.flags += kFlags[k];
    if (i < fmt.size() && fmt[i] == '*') return Err("'*' widths and precisions are not supported; write the number");
    if (i < fmt.size() && fmt[i] >= '1' && fmt[i] <= '9') {
      if (!Number(fmt, &i, &c.width))
        return Err(Cat("the width in '", Shown(fmt.substr(start, i - start)), "' is larger than ",
                       abi::kMaxPrintfWidth));
    }
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      if (i < fmt.size() && fmt[i] == '*')
        return Err("'*' widths and precisions are not supported; write the number");
      if (!Number(fmt, &i, &c.precision))
        return Err(Cat("the precision in '", Shown(fmt.substr(start, i - start)), "' is larger than ",
                       abi::kMaxPrintfWidth));
    }
    // Length modifier.
    std::string_view length;
    for (std::string_view m : {"hh", "ll", "h", "l", "j", "z", "t", "L", "q"}) {
      if (fmt.substr(i, m.size()) == m) {
        length = m;
        i += m.size();
        break;
      }
    }
    if (i >= fmt.size())
      return Err(Cat("the format ends inside the conversion '", Shown(fmt.substr(start)), "'"));
    c.conv = fmt[i++];
    const std::string spec = Shown(fmt.substr(start, i - start));
    ++conversions;
    const std::string_view kIntConv = "diuoxXc";
    const std::string_view kFloatConv = "fFeEgGaA";
    const bool int_conv = kIntConv.find(c.conv) != std::string_view::npos;
    const bool float_conv = kFloatConv.find(c.conv) != std::string_view::npos;
    if (c.conv == 'n') return Err("'%n' is not supported (it writes to memory)");
    if (c.conv != 's' && !int_conv && !float_conv)
      return Err(Cat("unsupported conversion '", spec,
                     "' (supported: %d %i %u %o %x %X %c %f %F %e %E %g %G %a %A %s %%)"));
    if (length == "L" || length == "q" || (c.conv == 's' && !length.empty()) ||
        (c.conv == 'c' && !length.empty()) || (float_conv && !length.empty() && length != "l"))
      return Err(Cat("the length modifier in '", spec, "' is not supported"));
    if (int_conv) {
      if (length == "hh") c.int_bits = 8;
      else if (length == "h") c.int_bits = 16;
      else if (!length.empty()) c.int_bits = 64;
    }
    if (next_arg >= args.size())
      return Err(Cat("the format has more conversions than the ", args.size(), " value",
                     args.size() == 1 ? "" : "s", " given (the ", Ordinal(conversions), " is '", spec, "')"));
    const PrintfArg& a = args[next_arg++];
    const std::string what = Cat("the ", Ordinal(conversions), " conversion '", spec, "'");
    if (c.conv == 's') {
      if (a.string == nullptr)
        return Err(Cat(what, " expects a string constant, got ", a.type ? a.type->ToString() : "no value"));
      AppendText(out, FormatString(c, *a.string));
      continue;
    }
    if (a.string != nullptr) return Err(Cat(what, " is given a string; use %s for strings"));
    if (a.type == nullptr || !a.type->is_scalar())
      return Err(Cat(what, " expects a scalar, got ", a.type ? a.type->ToString() : "no value"));
    const types::ScalarKind k = a.type->scalar();
    if (int_conv && types::IsFloat(k))
      return Err(Cat(what, " expects an integer, got ", a.type->ToString(), " (use %f, %e or %g, or convert with int())"));
    if (float_conv && !types::IsFloat(k))
      return Err(Cat(what, " expects a floating-point value, got ", a.type->ToString(),
                     " (use %d, or convert with float())"));
    PrintSegment s;
    s.type = a.type;
    s.conversion = std::move(c);
    out.push_back(std::move(s));
  }
  if (next_arg < args.size())
    return Err(Cat("the format has ", conversions, " conversion", conversions == 1 ? "" : "s", " but ", args.size(),
                   " value", args.size() == 1 ? " was" : "s were", " given"));
  return out;
}

}  // namespace warpd::builtins
