// warpd compiler: internal: how the table files add overloads.
//
//   b.Group("Vector Math", "warpd/native/mat.h");
//   b.Add("transpose", "a: mat(R, C, T)", "mat(C, R, T)").Diff();   // cpp "wp::transpose"
//   b.Add("floor", "x: T", "T", "T: Float").NoDiff();
//   b.Hook("vector", HookVector).Diff().Variadic();
// Differentiability is a decision per entry, never a default: every Add and
// Hook takes exactly one of Diff() or NoDiff() (Warp 1.19's per-overload
// `differentiable`, tests/fixtures/warp_builtins_1.19.json, checked by
// differentiability_test.cc). Finish() reports the entries without one, and
// the table aborts on them at first use (a bug in the table, caught by every
// test).
// Only builtins.cc, the table_*.cc files and their tests include this.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

#include "compiler/builtins/builtins.h"

namespace warpd::builtins::internal {

class Builder {
 public:
  class Entry {
   public:
    Entry(Builder& b, size_t index) : b_(b), i_(index) {}
    Entry& Cpp(std::string_view s) { o().cpp = std::string(s); return *this; }
    // Differentiable (an adjoint exists or is owed), or not; one of the two.
    Entry& Diff() { return Decide(true); }
    Entry& NoDiff() { return Decide(false); }
    Entry& Header(std::string_view h) { o().header = h; return *this; }
    // The adjoint's callee where the spelling is not a plain `wp::f`
    // (builtins/adjoint.h); a string literal.
    Entry& Adj(std::string_view callee) { o().adjoint = callee; return *this; }
    // The same, given the forward result after the forward arguments.
    Entry& AdjWithResult(std::string_view callee) {
      o().adjoint_takes_result = true;
      return Adj(callee);
    }
    // Overload::grad_arrays; a string literal.
    Entry& GradArrays(std::string_view spelling) { o().grad_arrays = spelling; return *this; }
    Entry& Form(builtins::Form f) { o().form = f; return *this; }
    Entry& Variadic() { o().variadic = true; return *this; }
    Entry& Targets(uint8_t t) { o().targets = t; return *this; }
    // Overload::same_types_error; a string literal.
    Entry& SameTypes(std::string_view error) { o().same_types_error = error; return *this; }

   private:
    Overload& o() { return b_.out_[i_]; }
    Entry& Decide(bool differentiable);
    Builder& b_;
    size_t i_;
  };

  // Entries already in `out` count as decided.
  explicit Builder(std::vector<Overload>& out) : out_(out), decisions_(out.size(), 1) {}

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
  // INTERNAL, naming each entry (name and parameters) that has no
  // differentiability decision or more than one; OK otherwise.
  absl::Status Finish() const;

 private:
  std::vector<Overload>& out_;
  // Per entry of out_: how many times Diff()/NoDiff() was called (exactly
  // one is required).
  std::vector<uint8_t> decisions_;
  std::string_view group_;
  std::string_view header_;
};

void AddOperators(Builder& b);
void AddScalarMath(Builder& b);
void AddVectorMath(Builder& b);
void AddQuaternionAndSpatial(Builder& b);
void AddRandom(Builder& b);
void AddUtility(Builder& b);
void AddGeometry(Builder& b);
void AddVolumes(Builder& b);

}  // namespace warpd::builtins::internal
