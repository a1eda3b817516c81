// warpd compiler: internal to codegen: the forward emitter of one
// function's TIR (FunctionEmitter), the line writer, and the spelling of
// names and constants, shared by the module emitter (codegen.cc) and the
// adjoint emitter (adjoint.cc, which replays a function forward through a
// FunctionEmitter before its reverse sweep). Only compiler/codegen includes it.
#pragma once

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/builtins/adjoint.h"
#include "compiler/builtins/builtins.h"
#include "compiler/codegen/client_text.h"
#include "compiler/codegen/lane_blocks.h"
#include "compiler/tir/tir.h"

namespace warpd::codegen::internal {

using ir::ScalarKind;
using ir::TypeRef;


inline std::string Local(const std::string& name) { return "v_" + name; }
inline std::string FuncSymbol(const std::string& name) { return "f_" + name; }
// A user function's generated adjoint (adjoint.h).
inline std::string AdjFuncSymbol(const std::string& name) { return "adj_f_" + name; }
inline std::string ArgsStruct(const std::string& kernel) { return "wpa_" + kernel; }
inline std::string BodySymbol(const std::string& kernel) { return "wpb_" + kernel; }

// Writes indented lines.
class Writer {
 public:
  void Line(const std::string& s) {
    for (int i = 0; i < indent_; ++i) out_ << "  ";
    out_ << s << "\n";
  }
  void Open(const std::string& s) {
    Line(s);
    ++indent_;
  }
  void Close(const std::string& s = "}") {
    --indent_;
    Line(s);
  }
  // Closes one block and opens the next: "} else {".
  void Reopen(const std::string& s) {
    --indent_;
    Line(s);
    ++indent_;
  }
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int indent_ = 0;
};

inline std::string FloatLiteral(double v, ScalarKind k) {
  char buf[64];
  if (k == ScalarKind::kFloat64) {
    if (std::isfinite(v)) {
      std::snprintf(buf, sizeof buf, "%a", v);
      return buf;
    }
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    std::snprintf(buf, sizeof buf, "wp::float64_from_bits(0x%" PRIx64 "ull)", bits);
    return buf;
  }
  float f = static_cast<float>(v);
  std::string lit;
  if (std::isfinite(f)) {
    std::snprintf(buf, sizeof buf, "%af", static_cast<double>(f));
    lit = buf;
  } else {
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    std::snprintf(buf, sizeof buf, "wp::float32_from_bits(0x%" PRIx32 "u)", bits);
    lit = buf;
  }
  if (k == ScalarKind::kFloat16) return "wp::float_to_half(" + lit + ")";
  if (k == ScalarKind::kBFloat16) return "wp::float_to_bfloat16(" + lit + ")";
  return lit;
}

inline std::string IntLiteral(int64_t v, ScalarKind k) {
  std::string cpp(types::ScalarCppName(k));
  if (!types::IsSigned(k)) return "((" + cpp + ")" + std::to_string(static_cast<uint64_t>(v)) + "ull)";
  if (v == INT64_MIN) return "((" + cpp + ")(-9223372036854775807ll - 1))";
  return "((" + cpp + ")" + std::to_string(v) + "ll)";
}

inline std::string ConstantText(const ir::ConstantValue& value, TypeRef type) {
  ScalarKind k = type->scalar();
  if (const bool* b = std::get_if<bool>(&value)) {
    if (k == ScalarKind::kBool) return *b ? "true" : "false";
    return IntLiteral(*b ? 1 : 0, k);
  }
  if (const int64_t* i = std::get_if<int64_t>(&value)) {
    if (types::IsFloat(k)) return FloatLiteral(static_cast<double>(*i), k);
    if (k == ScalarKind::kBool) return *i ? "true" : "false";
    return IntLiteral(*i, k);
  }
  double d = std::get<double>(value);
  if (types::IsFloat(k)) return FloatLiteral(d, k);
  return "wp::cast<" + std::string(types::ScalarCppName(k)) + ">(" + FloatLiteral(d, ScalarKind::kFloat64) + ")";
}

// Prints one function's TIR as C++: a visitor writing one statement (or
// block) per instruction.
class FunctionEmitter : public tir::Visitor<FunctionEmitter> {
 public:
  // `unchecked`: accesses emitted without a bounds check (a fast block's
  // thread-indexed ones; thread_index.h), as contiguous pointer arithmetic.
  // `lanes`: emit the lane-blocked body (kLanes thread ids from `_t0`;
  // lane_blocks.h).
  FunctionEmitter(const tir::Module& m, const tir::Function& f, Writer& w,
                  const std::set<const tir::ElementAddr*>* unchecked = nullptr, bool lanes = false)
      : m_(m), f_(f), w_(w), unchecked_(unchecked), lanes_(lanes) {
    const ir::Function& src = *f.source;
    fail_ = src.kind == ir::FunctionKind::kKernel || src.return_type->is_void() ? "return;" : "return {};";
  }

  virtual ~FunctionEmitter() = default;

  void Body() {
    if (lanes_) {
      LanesBody();
      return;
    }
    DeclareFrame(/*locals=*/true);
    VisitBlock(f_.body);
    if (!f_.is_kernel() && !f_.source->return_type->is_void()) w_.Line("return {};");
  }

  // Declares the user's locals (`locals`) and the storage of local arrays.
  void DeclareFrame(bool locals) {
    if (locals)
      for (const auto& v : f_.vars)
      if (v.kind == tir::VarKind::kLocal) w_.Line(v.type->CppName() + " " + Local(v.name) + "{};");
    // Local arrays' storage lives as long as the frame (their variables are
    // function-scoped, wherever the wp.zeros() call sits).
    struct Storage : tir::Visitor<Storage> {
      std::vector<const tir::LocalArray*> arrays;
      void VisitLocalArray(const tir::LocalArray& i) { arrays.push_back(&i); }
    } storage;
    storage.VisitBlock(f_.body);
    for (const tir::LocalArray* a : storage.arrays) {
      int n = 1;
      for (int d : a->shape) n *= d;
      const std::string name = "ls" + std::to_string(storage_.size());
      w_.Line(f_.var(a->dst).type->element()->CppName() + " " + name + "[" + std::to_string(n) + "];");
      storage_[a] = name;
    }
  }

  // Replay mode (the adjoint's forward pass): every variable was declared
  // by the caller at the top of the function, so definitions assign; a
  // fault returns (the adjoint function returns void).
  void SetReplay() {
    replay_ = true;
    fail_ = "return;";
  }

  void VisitDeclare(const tir::Declare& i) {
    w_.Line(lanes_ || replay_ ? Name(i.var) + " = " + Type(i.var) + "{};" : Type(i.var) + " " + Name(i.var) + "{};");
  }

  virtual void VisitLoad(const tir::Load& i) { Define(i.dst, PlaceText(i.place, false)); }

  virtual void VisitStore(const tir::Store& i) {
    const tir::Place& p = i.place;
    if (!p.steps.empty() && p.steps.back().kind == tir::Step::Kind::kMatrixRow) {
      tir::Place base = p;
      base.steps.pop_back();
      w_.Line("wp::mat_set_row(" + PlaceText(base, true) + ", " + IndexText(p.steps.back().index) + ", " +
              Op(i.value) + ");");
      return;
    }
    w_.Line(PlaceText(p, true) + " = " + Op(i.value) + ";");
  }

  virtual void VisitBuiltin(const tir::Builtin& i) {
    std::vector<std::string> args;
    for (const tir::Arg& a : i.args) {
      switch (a.mode) {
        case tir::Arg::Mode::kValue: args.push_back(Op(a.value)); break;
        case tir::Arg::Mode::kOut: args.push_back(PlaceText(a.place, true)); break;
        case tir::Arg::Mode::kAddress: args.push_back(Name(a.value.var)); break;
        case tir::Arg::Mode::kType: args.push_back("/* type */ {}"); break;
      }
    }
    std::string call = builtins::Spell(i.callee, {.args = &args, .line = i.span.line});
    if (i.dst == tir::kNoVar) {
      w_.Line(call + ";");
    } else {
      Define(i.dst, call);
    }
    // A builtin given its line may record a fault (an unknown object id):
    // the thread stops there, as after a failed array access.
    if (i.callee.find("$L") != std::string::npos) w_.Line("if (WP_UNLIKELY(wp::faulted(ctx))) " + fail_);
  }

  void VisitMakeTuple(const tir::MakeTuple& i) {
    std::string els;
    for (size_t k = 0; k < i.elements.size(); ++k) els += (k ? ", " : "") + Op(i.elements[k]);
    Define(i.dst, "wp::tuple_make(" + els + ")");
  }

  virtual void VisitCallFunc(const tir::CallFunc& i) {
    std::string args = "ctx, _tid";
    for (const auto& a : i.args) args += ", " + Op(a);
    std::string call = FuncSymbol(m_.source->functions[static_cast<size_t>(i.function)].name) + "(" + args + ")";
    if (i.dst == tir::kNoVar) {
      w_.Line(call + ";");
    } else {
      Define(i.dst, call);
    }
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) " + fail_);
  }

  // wp.grad(f)(args): zeroed adjoints of the arguments, f's result's adjoint
  // seeded with ones (wp::grad_seed: Warp's T(1)), f's adjoint called on
  // them (a builtin's native one, with its forward result when it takes it;
  // a user function's generated one), the adjoints its result. A function
  // that calls wp.grad() itself has no adjoint: its gradient is zero (Warp).
  void VisitGrad(const tir::Grad& i) {
    std::vector<TypeRef> inputs;
    for (const auto& a : i.args) inputs.push_back(a.type);
    if (!replay_) w_.Line(Type(i.dst) + " " + Name(i.dst) + ";");
    w_.Open("{");
    std::string adjoints, values;
    for (size_t k = 0; k < i.args.size(); ++k) {
      const std::string a = "_ga" + std::to_string(k);
      w_.Line(inputs[k]->CppName() + " " + a + "{};");
      adjoints += (k ? ", " : "") + a;
      values += (k ? ", " : "") + Op(i.args[k]);
    }
    w_.Line("const " + i.result->CppName() + " _gr = wp::grad_seed<" + i.result->CppName() + ">();");
    if (i.function < 0) {
      const std::optional<builtins::AdjointSpelling> adj = builtins::AdjointOf(*i.overload, inputs);
      std::string args = values;
      if (adj && adj->takes_result) {
        std::vector<std::string> forward;
        for (const auto& a : i.args) forward.push_back(Op(a));
        args += ", " + builtins::Spell(i.callee, {.args = &forward});
      }
      // Sema checked the adjoint exists; without one the text fails to compile.
      w_.Line((adj ? adj->callee : std::string("wp_no_adjoint")) + "(" + args + ", " + adjoints + ", _gr);");
    } else if (!tir::CallsGrad(m_.functions[static_cast<size_t>(i.function)])) {
      w_.Line(AdjFuncSymbol(m_.source->functions[static_cast<size_t>(i.function)].name) + "(ctx, _tid, " + values +
              ", " + adjoints + ", _gr);");
      w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) " + fail_);
    }
    w_.Line(Name(i.dst) + " = " + (i.args.size() == 1 ? adjoints : "wp::tuple_make(" + adjoints + ")") + ";");
    w_.Close();
  }

  virtual void VisitElementAddr(const tir::ElementAddr& i) {
    if (unchecked_ != nullptr && unchecked_->contains(&i)) {
      w_.Line((lanes_ ? "" : Type(i.dst) + "* ") + Name(i.dst) + " = wp::element_in_block(" + Op(i.array) +
              ", (wp::int64)" + Op(i.indices[0]) + ");");
      return;
    }
    std::string args = "ctx, " + Op(i.array) + ", " + Line(i.span);
    for (const auto& k : i.indices) args += ", (wp::int64)" + Op(k);
    w_.Line((replay_ ? "" : Type(i.dst) + "* ") + Name(i.dst) + " = wp::address(" + args + ");");
    w_.Line("if (WP_UNLIKELY(!" + Name(i.dst) + ")) " + fail_);
  }

  virtual void VisitSubview(const tir::Subview& i) {
    if (!i.slices.empty()) {  // a[1:3, j]: runtime/native/warpd/native/array.h slice_view
      std::string values, kinds;
      for (const auto& k : i.indices) values += (values.empty() ? "" : ", ") + std::string("(wp::int64)") + Op(k);
      for (bool s : i.slices) kinds += (kinds.empty() ? "" : ", ") + std::string(s ? "1" : "0");
      const std::string n = std::to_string(i.slices.size());
      if (!replay_) w_.Line(Type(i.dst) + " " + Name(i.dst) + ";");
      w_.Open("{");
      w_.Line("const wp::int64 sv[] = {" + values + "};");
      w_.Line("const wp::int32 sk[] = {" + kinds + "};");
      w_.Line("if (WP_UNLIKELY(!wp::slice_view(ctx, " + Op(i.array) + ", " + Line(i.span) + ", sv, sk, " + n + ", &" +
              Name(i.dst) + "))) " + fail_);
      w_.Close();
      return;
    }
    std::string args = "ctx, " + Op(i.array) + ", " + Line(i.span);
    for (const auto& k : i.indices) args += ", (wp::int64)" + Op(k);
    if (!replay_) w_.Line(Type(i.dst) + " " + Name(i.dst) + ";");
    w_.Line("if (WP_UNLIKELY(!wp::subview(" + args + ", &" + Name(i.dst) + "))) " + fail_);
  }

  virtual void VisitLocalArray(const tir::LocalArray& i) {
    std::string args = storage_.at(&i) + ", " + std::to_string(i.shape.size());
    for (size_t d = 0; d < 4; ++d) args += ", " + std::to_string(d < i.shape.size() ? i.shape[d] : 0);
    Define(i.dst, "wp::local_array(" + args + ")");
  }

  void VisitArrayShape(const tir::ArrayShape& i) {
    Define(i.dst, "(wp::int32)(" + Op(i.array) + ").shape[" + std::to_string(i.dim) + "]");
  }

  void VisitCheckIndex(const tir::CheckIndex& i) {
    std::string k = Op(i.index), n = std::to_string(i.extent);
    // Negative indices count from the end, as in Python (v[-1]).
    Define(i.dst, "(" + k + ") < 0 ? (" + Type(i.dst) + ")((" + k + ") + " + n + ") : (" + k + ")");
    w_.Line("if (WP_UNLIKELY((wp::uint64)(" + Name(i.dst) + ") >= " + n + "u)) { (void)wp::record_index_fault(ctx, " +
            Line(i.span) + ", 0, (wp::int64)(" + k + "), " + n + "); " + fail_ + " }");
  }

  void VisitTid(const tir::Tid& i) { Define(i.dst, "(wp::int32)_tid"); }

  void VisitTidCoords(const tir::TidCoords& i) {
    std::string c = "tc" + std::to_string(next_coords_++);
    std::string n = std::to_string(i.dsts.size());
    w_.Line("wp::int32 " + c + "[" + n + "];");
    w_.Line("wp::tid_coords(ctx->bounds, _tid, " + c + ", " + n + ");");
    for (size_t k = 0; k < i.dsts.size(); ++k) w_.Line(Name(i.dsts[k]) + " = " + c + "[" + std::to_string(k) + "];");
  }

  // One output record of the site (runtime/native/warpd/native/print.h).
  virtual void VisitPrint(const tir::Print& i) {
    std::vector<std::string> values;
    for (const auto& v : i.values) {
      std::string text = Op(v);
      if (v.type->is_array()) text = "wp::print_shape<" + std::to_string(v.type->ndim()) + ">(" + text + ")";
      values.push_back(text);
    }
    std::string diff;
    if (i.guard == tir::PrintGuard::kExpectNear) {
      // The difference is computed before the test that guards the record.
      diff = "tn" + std::to_string(next_coords_++);
      w_.Line("const " + i.values[0].type->CppName() + " " + diff + " = wp::expect_near_diff(" + values[2] + ", " +
              values[1] + ");");
      values.push_back(diff);
    }
    std::string record = "wp::print_record<" + std::to_string(i.site) + "u, " +
                         std::to_string(m_.prints.sites[i.site].payload) + "u>(ctx, _tid";
    for (const auto& v : values) record += ", " + v;
    record += ");";
    switch (i.guard) {
      case tir::PrintGuard::kNone: w_.Line(record); break;
      case tir::PrintGuard::kExpectNear: w_.Line("if (wp::expect_near_failed(" + diff + ", " + values[0] + ")) " + record); break;
      case tir::PrintGuard::kExpectEq: w_.Line("if (!wp::eq(" + values[1] + ", " + values[0] + ")) " + record); break;
      case tir::PrintGuard::kExpectNeq: w_.Line("if (wp::eq(" + values[1] + ", " + values[0] + ")) " + record); break;
    }
  }

  void VisitIf(const tir::If& i) {
    w_.Open("if (" + Op(i.cond) + ") {");
    VisitBlock(i.then_body);
    if (i.else_body.empty()) {
      w_.Close();
      return;
    }
    w_.Reopen("} else {");
    VisitBlock(i.else_body);
    w_.Close();
  }

  virtual void VisitFor(const tir::For& i) {
    // A 64-bit counter so `it += step` cannot overflow; step 0 runs no iterations.
    std::string it = "it" + std::to_string(next_coords_++);
    std::string lo = it + "_lo", hi = it + "_hi", st = it + "_st";
    w_.Line("const wp::int64 " + lo + " = (wp::int64)" + Op(i.start) + ", " + hi + " = (wp::int64)" + Op(i.stop) +
            ", " + st + " = (wp::int64)" + Op(i.step) + ";");
    w_.Open("for (wp::int64 " + it + " = " + lo + "; " + st + " > 0 ? " + it + " < " + hi + " : (" + st + " < 0 && " +
            it + " > " + hi + "); " + it + " += " + st + ") {");
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) " + fail_);
    w_.Line(Name(i.var) + " = (" + Type(i.var) + ")" + it + ";");
    VisitBlock(i.body);
    w_.Close();
  }

  virtual void VisitWhile(const tir::While& i) {
    w_.Open("for (;;) {");
    VisitBlock(i.cond_body);
    w_.Line("if (!(" + Op(i.cond) + ")) break;");
    w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) " + fail_);
    VisitBlock(i.body);
    w_.Close();
  }

  virtual void VisitBreak(const tir::Break&) { w_.Line("break;"); }
  virtual void VisitContinue(const tir::Continue&) { w_.Line("continue;"); }
  virtual void VisitReturn(const tir::Return& i) { w_.Line(i.has_value ? "return " + Op(i.value) + ";" : "return;"); }

 protected:
  std::string Line(const ir::Span& s) { return std::to_string(s.line); }
  std::string Type(tir::VarId v) const { return f_.var(v).type->CppName(); }
  std::string BaseName(tir::VarId v) const {
    const tir::Var& var = f_.var(v);
    if (var.kind == tir::VarKind::kParam || var.kind == tir::VarKind::kLocal) return Local(var.name);
    return "t" + std::to_string(v);
  }
  // In the lane-blocked body every variable but a parameter (and those the
  // emitter found the same in every lane, lane_uniform_) is an array indexed
  // by the lane.
  std::string Name(tir::VarId v) const {
    return lanes_ && f_.var(v).kind != tir::VarKind::kParam && !lane_uniform_.contains(v) ? BaseName(v) + "[_l]"
                                                                                          : BaseName(v);
  }
  // `const T tN = value;` (lanes: `tN[_l] = value;`)
  void Define(tir::VarId v, const std::string& value) {
    w_.Line(lanes_ || replay_ ? Name(v) + " = " + value + ";"
                              : "const " + Type(v) + " " + Name(v) + " = " + value + ";");
  }

  // The lane-blocked body (lane_blocks.h): variables as lane arrays, then
  // each stretch of the kernel's top-level instructions between its loops as
  // one loop over the lanes, and each loop as its iterations (polling for a
  // stop, outside the lane loop) around a loop over the lanes. Each lane runs
  // the scalar body's operations in the scalar body's order.
  void LanesBody() {
    const std::string lanes = std::to_string(kLanes);
    for (size_t v = 0; v < f_.vars.size(); ++v) {
      const tir::Var& var = f_.vars[v];
      if (var.kind == tir::VarKind::kParam) continue;
      const tir::VarId id = static_cast<tir::VarId>(v);
      w_.Line(Type(id) + (var.kind == tir::VarKind::kElementRef ? "* " : " ") + BaseName(id) + "[" + lanes + "]{};");
    }
    std::vector<const tir::Inst*> stretch;
    auto flush = [&] {
      if (stretch.empty()) return;
      LaneLoops(stretch, "");
      stretch.clear();
    };
    for (const auto& inst : f_.body) {
      if (inst->kind != tir::InstKind::For) {
        stretch.push_back(inst.get());
        continue;
      }
      flush();
      const tir::For& i = tir::Cast<tir::For>(*inst);
      const std::string it = "it" + std::to_string(next_coords_++);
      const std::string lo = it + "_lo", n = it + "_n", st = Op(i.step);
      w_.Line("const wp::int64 " + lo + " = (wp::int64)" + Op(i.start) + ";");
      w_.Line("const wp::int64 " + n + " = (wp::int64)wp::loop_trips(" + lo + ", (wp::int64)" + Op(i.stop) +
              ", (wp::int64)" + st + ");");
      w_.Open("for (wp::int64 " + it + " = 0; " + it + " < " + n + "; ++" + it + ") {");
      w_.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) " + fail_);
      std::vector<const tir::Inst*> body;
      for (const auto& b : i.body) body.push_back(b.get());
      LaneLoops(body, Name(i.var) + " = (" + Type(i.var) + ")(" + lo + " + " + it + " * (wp::int64)" + st + ");");
      w_.Close();
    }
    flush();
  }

  // Loops over the lanes running `insts` in order (`first` opens the first
  // one). A float32 sin or cos of a lane array (LaneMathOf) ends the lane
  // loop and runs as wp::sincos_lanes, together with the other function of
  // the same variable when that follows with nothing in between that could
  // write the variable (only loads and builtins without output arguments).
  void LaneLoops(const std::vector<const tir::Inst*>& insts, const std::string& first) {
    const std::string lanes = std::to_string(kLanes);
    auto open = [&] {
      w_.Open("for (int _l = 0; _l < " + lanes + "; ++_l) {");
      w_.Line("const wp::int64 _tid = (wp::int64)_t0 + _l;");
    };
    open();
    if (!first.empty()) w_.Line(first);
    std::set<const tir::Inst*> done;  // partners already run
    for (size_t k = 0; k < insts.size(); ++k) {
      const tir::Inst* inst = insts[k];
      if (done.contains(inst)) continue;
      const LaneMath kind =
          inst->kind == tir::InstKind::Builtin ? LaneMathOf(f_, tir::Cast<tir::Builtin>(*inst)) : LaneMath::kNone;
      if (kind == LaneMath::kNone) {
        Visit(*inst);
        continue;
      }
      const tir::Builtin& call = tir::Cast<tir::Builtin>(*inst);
      const tir::VarId x = call.args[0].value.var;
      std::string dst[2] = {"nullptr", "nullptr"};  // sin, cos
      dst[kind == LaneMath::kSin ? 0 : 1] = BaseName(call.dst);
      for (size_t j = k + 1; j < insts.size(); ++j) {
        const tir::Inst* next = insts[j];
        if (next->kind == tir::InstKind::Load) {
          if (tir::Cast<tir::Load>(*next).dst == x) break;
          continue;
        }
        if (next->kind != tir::InstKind::Builtin) break;
        const tir::Builtin& b = tir::Cast<tir::Builtin>(*next);
        const LaneMath other = LaneMathOf(f_, b);
        if (other != LaneMath::kNone && other != kind && b.args[0].value.var == x) {
          dst[other == LaneMath::kSin ? 0 : 1] = BaseName(b.dst);
          done.insert(next);
          break;
        }
        bool writes = b.dst == x;
        for (const tir::Arg& a : b.args) writes |= a.mode != tir::Arg::Mode::kValue;
        if (writes) break;
      }
      w_.Close();
      w_.Line(std::string("wp::sincos_lanes<") + lanes + ", " + (dst[0] != "nullptr" ? "true" : "false") + ", " +
              (dst[1] != "nullptr" ? "true" : "false") + ">(" + dst[0] + ", " + dst[1] + ", " + BaseName(x) + ");");
      open();
    }
    w_.Close();
  }

  std::string Op(const tir::Operand& o) const { return o.is_var() ? Name(o.var) : ConstantText(o.value, o.type); }
  // Constant indices print as plain numbers.
  std::string IndexText(const tir::Operand& o) const {
    if (const int64_t* k = std::get_if<int64_t>(&o.value); k && !o.is_var()) return std::to_string(*k);
    return Op(o);
  }

  // A place as C++: an lvalue for stores and output arguments, a value for
  // loads (a matrix row or transform element read by value).
  // `root` replaces the root variable's name (the adjoint emitter's
  // adjoint variables share the primal's paths).
  std::string PlaceText(const tir::Place& p, bool lvalue, const std::string* root = nullptr) const {
    const std::string name = root ? *root : Name(p.root);
    std::string s = f_.var(p.root).kind == tir::VarKind::kElementRef ? "(*" + name + ")" : name;
    for (const tir::Step& st : p.steps) {
      switch (st.kind) {
        case tir::Step::Kind::kComponent: s += ".c[" + IndexText(st.index) + "]"; break;
        case tir::Step::Kind::kMatrixElement:
          s += ".c[" + IndexText(st.index) + "][" + IndexText(st.index2) + "]";
          break;
        case tir::Step::Kind::kMatrixRow:
          s = std::string(lvalue ? "wp::mat_row_ref(" : "wp::mat_row(") + s + ", " + IndexText(st.index) + ")";
          break;
        case tir::Step::Kind::kTransformIndex:
          s = std::string(lvalue ? "wp::transform_ref(" : "wp::transform_get(") + s + ", " + IndexText(st.index) + ")";
          break;
        case tir::Step::Kind::kMember: s += ".m_" + st.name; break;
        case tir::Step::Kind::kField: s += "." + st.name; break;
        case tir::Step::Kind::kTupleElement: s = "wp::tuple_get<" + std::to_string(st.element) + ">(" + s + ")"; break;
      }
    }
    return s;
  }

  const tir::Module& m_;
  const tir::Function& f_;
  Writer& w_;
  const std::set<const tir::ElementAddr*>* unchecked_;
  const bool lanes_;
  bool replay_ = false;
  std::string fail_;
  int next_coords_ = 0;
  std::map<const tir::LocalArray*, std::string> storage_;  // the storage of each local array
  std::set<tir::VarId> lane_uniform_;  // lanes: variables every lane holds the same value of (one copy)
};

}  // namespace warpd::codegen::internal
