// tools/gpu_check: a small JSON value for the GPU check's manifests.
//
// Objects keep their keys in insertion order (manifests are read by people
// too). Numbers are int64 or finite doubles, written so that they read back
// exactly (%.17g). Not thread-safe; a value owns its children.
//
//   Json m = Json::Object();
//   m.Set("entry", "wpk_saxpy_cuda").Set("args_size", 200);
//   std::string text = m.Dump();
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warpd::gpu_check {

class Json {
 public:
  Json() = default;  // null
  Json(bool v) : kind_(Kind::kBool), int_(v) {}
  Json(int v) : kind_(Kind::kInt), int_(v) {}
  Json(int64_t v) : kind_(Kind::kInt), int_(v) {}
  Json(uint32_t v) : kind_(Kind::kInt), int_(v) {}
  Json(double v) : kind_(Kind::kDouble), double_(v) {}
  Json(std::string v) : kind_(Kind::kString), string_(std::move(v)) {}
  Json(const char* v) : kind_(Kind::kString), string_(v) {}

  static Json Array() { return Json(Kind::kArray); }
  static Json Object() { return Json(Kind::kObject); }

  // Appends to an array; returns *this for chaining.
  Json& Add(Json v);
  // Sets a key of an object (a key set twice keeps its first place).
  Json& Set(std::string_view key, Json v);

  // The text, indented by two spaces per level; arrays of numbers stay on
  // one line. Aborts on a non-finite double (a bug in the generator).
  std::string Dump() const;

 private:
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  explicit Json(Kind k) : kind_(k) {}
  void DumpTo(std::string& out, int depth) const;

  Kind kind_ = Kind::kNull;
  int64_t int_ = 0;
  double double_ = 0;
  std::string string_;
  std::vector<Json> items_;                         // array elements or object values
  std::vector<std::string> keys_;                   // object keys, parallel to items_
};

}  // namespace warpd::gpu_check
