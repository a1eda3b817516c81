// Test-only: one module that exercises loops, branches, a user function,
// vec3 arrays and vector builtins, shared by the compiler's tests and the GPU
// check (tools/gpu_check), which compare it with a reference written apart:
//
//   square(x: float32): return x * x
//   <kernel>(out: array(float32), v: array(vec3)):
//     i = tid(); s = 0.0
//     for j in range(i + 1): if j % 2 == 0: s = s + square(float32(j)) else: s = s - 1.0
//     c = cross(v[i], vec3(0.0, 0.0, 1.0))
//     out[i] = s + dot(c, c) + length(normalize(v[i]))
#pragma once

#include <string>

#include "compiler/testing/ir_builder.h"

namespace warpd::testing {

inline v1::Module FeatureModule(const std::string& kernel = "k", const std::string& module = "test") {
  return ModuleOf(
      {Func("square", {{"x", F32()}}, {Return(Bin(v1::BINOP_MUL, Name("x"), Name("x")))}),
       Kernel(kernel, {{"out", Arr(F32())}, {"v", Arr(Vec(3))}},
              {Assign(Name("i"), Call("tid", {})), Assign(Name("s"), Float(0.0)),
               For("j", {Bin(v1::BINOP_ADD, Name("i"), Int(1))},
                   {If(Cmp(v1::CMP_EQ, Bin(v1::BINOP_MOD, Name("j"), Int(2)), Int(0)),
                       {Assign(Name("s"), Bin(v1::BINOP_ADD, Name("s"),
                                              Call("square", {Call("float32", {Name("j")})}, 1, v1::CALLEE_FUNCTION)))},
                       {Assign(Name("s"), Bin(v1::BINOP_SUB, Name("s"), Float(1.0)))})}),
               Assign(Name("c"), Call("cross", {Sub(Name("v"), {Name("i")}), Call("vec3", {Float(0), Float(0), Float(1)})})),
               Assign(Sub(Name("out"), {Name("i")}),
                      Bin(v1::BINOP_ADD, Bin(v1::BINOP_ADD, Name("s"), Call("dot", {Name("c"), Name("c")})),
                          Call("length", {Call("normalize", {Sub(Name("v"), {Name("i")})})})))})},
      module);
}

}  // namespace warpd::testing
