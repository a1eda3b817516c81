// warpd compiler: numbers a module's print(), wp.printf() and
// wp.expect_near() calls and describes what each prints
// (common/abi/print_table.h).
//
// Run after sema. Codegen emits each call as one output record of its site
// holding the call's values (runtime/native/warpd/native/print.h); the table
// goes with the compiled module to the runtime, which formats the records.
// The table holds the client's text (format strings, string constants), so
// it is part of the module cache key but never of the generated source.
// Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/abi/print_table.h"
#include "compiler/ir/ir.h"

namespace warpd::tir {

// A call's site and the values its record holds, in payload order: operand
// indices, or kExpectNearDiff for expect_near's computed difference.
struct PrintCallSite {
  uint32_t site = 0;
  std::vector<int> values;
  // print(): the site of its line in a backward pass ("adj: " and the
  // adjoints of its values but arrays, as Warp's adj_print); -1 for others.
  int32_t adjoint_site = -1;
};
constexpr int kExpectNearDiff = -1;

struct PrintSites {
  abi::PrintTable table;
  std::unordered_map<const ir::Expr*, PrintCallSite> calls;
};

// Sites in a fixed order (functions in module order, statements and
// expressions in source order), so equal modules get equal tables.
PrintSites CollectPrintSites(const ir::Module& module);

// A canonical text of the table (every byte of it matters), for cache keys.
std::string PrintTableKey(const abi::PrintTable& table);

}  // namespace warpd::tir
