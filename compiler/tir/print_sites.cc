#include "compiler/tir/print_sites.h"

#include <variant>

#include "common/str_cat.h"
#include "compiler/builtins/builtins.h"
#include "compiler/builtins/printf_format.h"

namespace warpd::tir {
namespace {

using abi::PrintSegment;
using abi::PrintSite;
using ir::Expr;
using ir::ExprKind;

using ir::IsStringConstant;

void Text(PrintSite& site, std::string_view text) {
  if (!site.segments.empty() && site.segments.back().type == nullptr) {
    site.segments.back().text.append(text.data(), text.size());
    return;
  }
  PrintSegment s;
  s.text = std::string(text);
  site.segments.push_back(std::move(s));
}

void Value(PrintSite& site, types::TypeRef type, bool adjoint = false) {
  PrintSegment s;
  s.type = type;
  s.conversion.adjoint = adjoint;
  site.segments.push_back(std::move(s));
}

class Collector {
 public:
  explicit Collector(const ir::Module& m) : m_(m), prints_(m.functions.size(), -1) {}

  PrintSites Run() {
    for (size_t f = 0; f < m_.functions.size(); ++f) {
      if (!ir::IsEmitted(m_.functions[f])) continue;  // a template (its instances have the sites), or dropped
      current_ = static_cast<int>(f);
      Block(m_.functions[f].body);
    }
    for (size_t f = 0; f < m_.functions.size(); ++f)
      if (m_.functions[f].kind == ir::FunctionKind::kKernel && ir::IsEmitted(m_.functions[f]) &&
          MayPrint(static_cast<int>(f)))
        out_.table.kernels.push_back(m_.functions[f].name);
    return std::move(out_);
  }

 private:
  void Block(const ir::Block& b) {
    for (const auto& s : b) {
      if (s->target) Visit(*s->target);
      if (s->value) Visit(*s->value);
      Block(s->body);
      Block(s->orelse);
    }
  }

  void Visit(const Expr& e) {
    for (const auto& o : e.operands) Visit(*o);
    if (e.kind != ExprKind::Call) return;
    if (e.callee_kind == ir::CalleeKind::kFunction) {
      callees_[current_].push_back(e.function_index);
      return;
    }
    if (e.overload == nullptr) return;
    if (e.overload->form == builtins::Form::kPrintf) {
      Printf(e);
    } else if (e.overload->form == builtins::Form::kPrint && e.overload->name == "print") {
      Print(e);
    } else if (e.overload->form == builtins::Form::kPrint && e.overload->name == "expect_near") {
      ExpectNear(e);
    } else if (e.overload->form == builtins::Form::kPrint &&
               (e.overload->name == "expect_eq" || e.overload->name == "expect_neq")) {
      ExpectEq(e, e.overload->name);
    }
  }

  // print(a, b, ...): the values as Warp shows them, separated by spaces.
  void Print(const Expr& e) {
    PrintSite site;
    PrintCallSite call;
    for (size_t i = 0; i < e.operands.size(); ++i) {
      const Expr& a = *e.operands[i];
      if (i > 0) Text(site, " ");
      if (IsStringConstant(a)) {
        Text(site, std::get<std::string>(a.value));
      } else if (a.type->is_struct() || a.type->is_tuple() || a.type->is_array()) {
        Text(site, "<type without print implementation>");  // Warp's words
      } else {
        Value(site, a.type);
        call.values.push_back(static_cast<int>(i));
      }
    }
    Text(site, "\n");
    // In a backward pass Warp's adj_print() follows, in the reverse sweep: a
    // line "adj: <adjoint>" per value (a string is its own adjoint; arrays,
    // structs and tuples have no print), after the replay printed the values.
    PrintSite adjoint;
    for (const auto& a : e.operands) {
      if (IsStringConstant(*a)) {
        Text(adjoint, "adj: " + std::get<std::string>(a->value) + "\n");
      } else if (a->type->is_struct() || a->type->is_tuple() || a->type->is_array()) {
        Text(adjoint, "adj: <type without print implementation>\n");
      } else {
        Text(adjoint, "adj:");
        Value(adjoint, a->type, /*adjoint=*/true);
        Text(adjoint, "\n");
      }
    }
    call.site = Site(std::move(site));
    call.adjoint_site = static_cast<int32_t>(Site(std::move(adjoint)));
    out_.calls.emplace(&e, std::move(call));
    has_sites_[current_] = true;
  }

  // printf(fmt, args...): checked by sema's hook; parsed again here.
  void Printf(const Expr& e) {
    std::vector<builtins::PrintfArg> args;
    PrintCallSite call;
    for (size_t i = 1; i < e.operands.size(); ++i) {
      const Expr& a = *e.operands[i];
      if (IsStringConstant(a)) {
        args.push_back({nullptr, &std::get<std::string>(a.value)});
      } else {
        args.push_back({a.type, nullptr});
        call.values.push_back(static_cast<int>(i));
      }
    }
    auto segments = builtins::PrintfSegments(std::get<std::string>(e.operands[0]->value), args);
    PrintSite site;
    if (segments.ok()) {
      site.segments = *std::move(segments);
    } else {  // unreachable after sema; print nothing rather than guess
      call.values.clear();
    }
    Add(e, std::move(site), std::move(call));
  }

  // expect_near(actual, expected, tolerance), printed only when the
  // difference exceeds the tolerance, in Warp's words.
  void ExpectNear(const Expr& e) {
    const Expr& actual = *e.operands[0];
    const types::TypeRef scalar = e.operands[2]->type;
    PrintSite site;
    Text(site, "Error, expect_near() failed with tolerance ");
    Value(site, scalar);
    Text(site, "\n    Expected: ");
    Value(site, e.operands[1]->type);
    Text(site, "\n    Actual: ");
    Value(site, actual.type);
    Text(site, actual.type->is_scalar() ? "\n    Absolute difference: " : "\n    Max absolute difference: ");
    Value(site, scalar);
    Text(site, "\n");
    Add(e, std::move(site), PrintCallSite{0, {2, 1, 0, kExpectNearDiff}});
  }

  // expect_eq(actual, expected) / expect_neq: printed only when the test fails.
  void ExpectEq(const Expr& e, std::string_view name) {
    PrintSite site;
    Text(site, Cat("Error, ", name, "() failed:\n\t Expected: "));
    Value(site, e.operands[1]->type);
    Text(site, "\n\t Actual: ");
    Value(site, e.operands[0]->type);
    Text(site, "\n");
    Add(e, std::move(site), PrintCallSite{0, {1, 0}});
  }

  void Add(const Expr& e, PrintSite site, PrintCallSite call) {
    call.site = Site(std::move(site));
    out_.calls.emplace(&e, std::move(call));
    has_sites_[current_] = true;
  }

  // Lays out the site's payload and numbers it.
  uint32_t Site(PrintSite site) {
    uint32_t offset = 0;
    for (auto& s : site.segments) {
      if (s.type == nullptr) continue;
      s.offset = offset;
      offset += abi::PrintValueSize(s.type);
    }
    site.payload = offset;
    out_.table.sites.push_back(std::move(site));
    return static_cast<uint32_t>(out_.table.sites.size() - 1);
  }

  // Whether function f or a function it calls has a print site (sema has
  // rejected recursion; the state array guards anyway).
  bool MayPrint(int f) {
    if (prints_[f] >= 0) return prints_[f] == 1;
    prints_[f] = 0;
    bool p = has_sites_.count(f) > 0;
    for (int callee : callees_[f])
      if (callee >= 0 && static_cast<size_t>(callee) < m_.functions.size()) p = MayPrint(callee) || p;
    prints_[f] = p ? 1 : 0;
    return p;
  }

  const ir::Module& m_;
  PrintSites out_;
  int current_ = 0;
  std::unordered_map<int, bool> has_sites_;
  std::unordered_map<int, std::vector<int>> callees_;
  std::vector<int> prints_;  // -1 unknown, 0 no, 1 yes
};

void Put(std::string& out, std::string_view s) {
  out += std::to_string(s.size());
  out += ':';
  out.append(s.data(), s.size());
}

}  // namespace

PrintSites CollectPrintSites(const ir::Module& module) { return Collector(module).Run(); }

std::string PrintTableKey(const abi::PrintTable& table) {
  std::string out = "print-table-2;";
  for (const auto& site : table.sites) {
    out += "site " + std::to_string(site.payload) + ";";
    for (const auto& s : site.segments) {
      if (s.type == nullptr) {
        out += "t";
        Put(out, s.text);
        continue;
      }
      const auto& c = s.conversion;
      out += "v";
      Put(out, s.type->ToString());
      out += std::to_string(s.offset) + "," + std::to_string(static_cast<int>(c.conv)) + ",";
      Put(out, c.flags);
      out += std::to_string(c.width) + "," + std::to_string(c.precision) + "," + std::to_string(c.int_bits) + "," +
             (c.adjoint ? "a" : "f") + ";";
    }
  }
  for (const auto& k : table.kernels) {
    out += "k";
    Put(out, k);
  }
  return out;
}

}  // namespace warpd::tir
