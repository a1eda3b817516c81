#include "tools/gpu_check/json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace warpd::gpu_check {
namespace {

void Quote(std::string& out, std::string_view s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

}  // namespace

Json& Json::Add(Json v) {
  if (kind_ != Kind::kArray) std::abort();
  items_.push_back(std::move(v));
  return *this;
}

Json& Json::Set(std::string_view key, Json v) {
  if (kind_ != Kind::kObject) std::abort();
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) {
      items_[i] = std::move(v);
      return *this;
    }
  }
  keys_.emplace_back(key);
  items_.push_back(std::move(v));
  return *this;
}

std::string Json::Dump() const {
  std::string out;
  DumpTo(out, 0);
  out += '\n';
  return out;
}

void Json::DumpTo(std::string& out, int depth) const {
  const std::string indent(2 * (depth + 1), ' ');
  const std::string close_indent(2 * depth, ' ');
  switch (kind_) {
    case Kind::kNull: out += "null"; return;
    case Kind::kBool: out += int_ ? "true" : "false"; return;
    case Kind::kInt: out += std::to_string(int_); return;
    case Kind::kDouble: {
      if (!std::isfinite(double_)) std::abort();
      char buf[32];
      std::snprintf(buf, sizeof(buf), "%.17g", double_);
      out += buf;
      // Keep it a JSON number that Python reads as float ("2" would be an int).
      if (std::string_view(buf).find_first_of(".eE") == std::string_view::npos) out += ".0";
      return;
    }
    case Kind::kString: Quote(out, string_); return;
    case Kind::kArray: {
      bool flat = true;
      for (const Json& v : items_) flat = flat && (v.kind_ == Kind::kInt || v.kind_ == Kind::kDouble);
      out += '[';
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += flat ? ", " : ",";
        if (!flat) out += "\n" + indent;
        items_[i].DumpTo(out, depth + 1);
      }
      if (!flat && !items_.empty()) out += "\n" + close_indent;
      out += ']';
      return;
    }
    case Kind::kObject: {
      out += '{';
      for (size_t i = 0; i < items_.size(); ++i) {
        out += i ? ",\n" : "\n";
        out += indent;
        Quote(out, keys_[i]);
        out += ": ";
        items_[i].DumpTo(out, depth + 1);
      }
      if (!items_.empty()) out += "\n" + close_indent;
      out += '}';
      return;
    }
  }
}

}  // namespace warpd::gpu_check
