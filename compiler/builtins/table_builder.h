// warpd compiler: internal: how the table files add overloads.
//
//   b.Group("Vector Math", "warpd/native/mat.h");
//   b.Add("transpose", "a: mat(R, C, T)", "mat(C, R, T)");          // cpp "wp::transpose"
//   b.Add("floor", "x: T", "T", "T: Float").NoDiff();
//   b.Hook("vector", HookVector).Variadic();
// Only builtins.cc and the table_*.cc files include this.
#pragma once

#include <string_view>
#include <vector>

#include "compiler/builtins/builtins.h"

namespace warpd::builtins::internal {

class Builder {
 public:
  class Entry {
   public:
    explicit Entry(Overload& o) : o_(o) {}
    Entry& Cpp(std::string_view s) { o_.cpp = std::string(s); return *this; }
    Entry& NoDiff() { o_.differentiable = false; return *this; }
    Entry& Header(std::string_view h) { o_.header = h; return *this; }
    Entry& Form(builtins::Form f) { o_.form = f; return *this; }
    Entry& Variadic() { o_.variadic = true; return *this; }
    Entry& Targets(uint8_t t) { o_.targets = t; return *this; }

   private:
    Overload& o_;
  };

  explicit Builder(std::vector<Overload>& out) : out_(out) {}

  // Sets the group and default header of the entries that follow.
  void Group(std::string_view group, std::string_view header = "") {
    group_ = group;
    header_ = header;
  }
  // A regular overload; aborts on a malformed pattern (a bug in the table,
  // caught by every test).
  Entry Add(std::string_view name, std::string_view params, std::string_view result,
            std::string_view constraints = "");
  // An irregular builtin typed by `hook`.
  Entry Hook(std::string_view name, TypeHook hook, std::string_view params_text = "",
             std::string_view result_text = "");

 private:
  std::vector<Overload>& out_;
  std::string_view group_;
  std::string_view header_;
};

void AddOperators(Builder& b);
void AddScalarMath(Builder& b);
void AddVectorMath(Builder& b);
void AddQuaternionAndSpatial(Builder& b);
void AddRandom(Builder& b);
void AddUtility(Builder& b);

}  // namespace warpd::builtins::internal
