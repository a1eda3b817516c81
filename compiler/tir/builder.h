// warpd compiler: builds TIR instructions into a function, checking types.
//
// Every node of tir.h is made here. Each maker checks what the node needs
// (a store's value has the place's type, indices are integers, a call's
// arguments match the callee's parameters, ...); the first violation is
// recorded as an INTERNAL status (lowering produced ill-typed TIR: warpd's
// bug, not the user's) and later makers become no-ops, so a pass builds
// straight-line code and checks status() once at the end.
// Thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "compiler/tir/tir.h"

namespace warpd::tir {

class Builder {
 public:
  // `module` gives the callees of CallFunc; `f` receives vars and code.
  Builder(const ir::Module& module, Function& f);

  const absl::Status& status() const { return status_; }
  Function& function() { return f_; }

  // Variables. Slot() also emits the Declare.
  VarId NewVar(VarKind kind, TypeRef type, std::string name = "");
  VarId Slot(TypeRef type, const ir::Span& span);
  TypeRef TypeOf(VarId v) const;

  // Where instructions go: the function's body until redirected. Scope
  // appends to `b` for its lifetime.
  class Scope {
   public:
    Scope(Builder& b, Block& into) : b_(b), saved_(b.block_) { b.block_ = &into; }
    ~Scope() { b_.block_ = saved_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Builder& b_;
    Block* saved_;
  };

  // Places.
  Place Root(VarId v);
  Place Component(Place p, Operand index);  // after a matrix row: the element
  Place MatrixRow(Place p, Operand index);
  Place MatrixElement(Place p, Operand row, Operand col);
  Place TransformIndex(Place p, Operand index);
  Place Member(Place p, const std::string& name);  // struct member, or transform p/q
  Place TupleElement(Place p, int element);

  // Instructions. Makers with a result return it as an Operand (a var);
  // Load of a whole param/local/temp returns that var without an instruction.
  Operand Load(Place p, const ir::Span& span);
  void Store(Place p, Operand value, const ir::Span& span);
  // A void builtin returns an Operand with a void type and no var.
  Operand CallBuiltin(const builtins::Overload* overload, std::string callee, std::vector<Arg> args, TypeRef result,
                      const ir::Span& span);
  Operand CallFunction(int function, std::vector<Operand> args, const ir::Span& span);
  // wp.grad(f)(args) of builtin `overload` (spelled `callee`; function -1) or
  // user function `function`: `gradient` is the type of the result (the
  // argument's type, or the tuple of the arguments' types), `result` the
  // callee's result type.
  Operand Grad(const builtins::Overload* overload, std::string callee, int function, std::vector<Operand> args,
               TypeRef gradient, TypeRef result, const ir::Span& span);
  // `tuple` is the tuple type of the elements (made by sema in the module's table).
  Operand MakeTuple(TypeRef tuple, std::vector<Operand> elements, const ir::Span& span);
  VarId ElementAddr(Operand array, std::vector<Operand> indices, const ir::Span& span);
  Operand Subview(Operand array, std::vector<Operand> indices, const ir::Span& span);
  // a[1:3, j]: `slices` flags each position; a slice's start, stop and step
  // are three consecutive operands of `operands`.
  Operand SliceView(Operand array, std::vector<bool> slices, std::vector<Operand> operands, const ir::Span& span);
  Operand LocalArray(TypeRef array, std::vector<int> shape, const ir::Span& span);
  Operand ArrayShape(Operand array, int dim, const ir::Span& span);
  // The component index to use for `index` (negative ones count from the end).
  Operand CheckIndex(Operand index, int extent, const ir::Span& span);
  Operand Tid(const ir::Span& span);
  void TidCoords(std::vector<VarId> dsts, const ir::Span& span);
  void Print(uint32_t site, std::vector<Operand> values, PrintGuard guard, const ir::Span& span,
             int32_t adjoint_site = -1);
  If& MakeIf(Operand cond, const ir::Span& span);
  For& MakeFor(VarId var, Operand start, Operand stop, Operand step, const ir::Span& span);
  While& MakeWhile(const ir::Span& span);  // then fill cond_body, cond, body
  void MakeBreak(const ir::Span& span);
  void MakeContinue(const ir::Span& span);
  void MakeReturn(const Operand* value, const ir::Span& span);

  // Records an internal error (the first one wins).
  void Fail(const ir::Span& span, std::string_view what);

 private:
  template <class T>
  T& Append(const ir::Span& span);
  bool CheckOperand(const Operand& o, const ir::Span& span, std::string_view what);
  bool CheckIndexOperand(const Operand& o, const ir::Span& span);
  bool CheckArray(const Operand& a, const ir::Span& span);
  Place AddStep(Place p, Step s);

  const ir::Module& m_;
  Function& f_;
  Block* block_;
  absl::Status status_;
  // Where malformed instructions go once status_ is set (never emitted).
  Block discard_;
};

}  // namespace warpd::tir
