// warpd compiler: conversion between the wire IR (proto/warpd/v1/ir.proto) and
// the in-memory IR. This is the only code in the compiler that sees the proto.
//
// ModuleFromProto checks structure and limits (node counts, nesting depth,
// identifier syntax, enum values) before building anything, so every later
// pass may assume a well-formed tree. Errors are INVALID_ARGUMENT naming the
// user's file:line where one is known. Thread-safe (pure functions).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "compiler/ir/ir.h"
#include "warpd/v1/ir.pb.h"

namespace warpd::ir {

struct Limits {
  int max_functions = 1024;
  int max_nodes = 1 << 20;      // expressions + statements in the module
  int max_depth = 64;           // nesting of expressions and statements
  int max_params = 256;
  int max_identifier = 256;     // characters
  int max_text = 4096;          // bytes of a source file name or the module name
  int max_statements = 10000;   // statements in one function (compile time grows with them)
};

absl::StatusOr<std::unique_ptr<Module>> ModuleFromProto(const v1::Module& proto,
                                                        const Limits& limits = Limits());

// Types of every family (types/type.h limits). Structs, and arrays of them,
// are interned in `table` (a module's or an array's own table); struct-free
// types come from the global table. Nesting is bounded by `max_depth`.
absl::StatusOr<TypeRef> TypeFromProto(const v1::TypeRef& proto, types::TypeTable& table, int max_depth = 16);
// A @wp.func's parameter or return type: TypeFromProto's, or a tuple of them
// (tuple[int, float]; interned in `table`, a module's own). A variadic tuple
// (tuple[int, ...]) is a generic parameter, which the converter handles.
absl::StatusOr<TypeRef> FunctionTypeFromProto(const v1::TypeRef& proto, types::TypeTable& table);
v1::TypeRef TypeToProto(TypeRef type);

}  // namespace warpd::ir
