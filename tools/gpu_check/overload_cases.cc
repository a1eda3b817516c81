// The GPU check's overload cases: every overload of the builtin table, as
// overloads_test generates them (compiler/testing/overload_generator.h), run
// on the device and compared with the same generated source's CPU entry.
//
// The reference is computed here: each module is compiled for the CPU in
// this process, and each kernel launched alone (one thread, its outputs
// zeroed) on the same inputs the device gets. Kernels that print are left
// out (the check gives launches no print buffer).
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "compiler/compiler.h"
#include "compiler/ir/from_proto.h"
#include "compiler/testing/overload_generator.h"
#include "tools/gpu_check/case_data.h"
#include "warpd/native/array.h"
#include "warpd/native/launch.h"

namespace warpd::gpu_check {
namespace {

using testing::GeneratedModule;

// The catalog's calls cut every kCallsPerModule, as overloads_test does.
constexpr size_t kCallsPerModule = 250;

std::string Encoded(types::TypeRef t, const std::vector<testing::Value>& values) {
  std::string bytes(values.size() * t->size(), '\0');
  for (size_t i = 0; i < values.size(); ++i)
    testing::EncodeValue(t, values[i], reinterpret_cast<uint8_t*>(bytes.data()) + i * t->size());
  return bytes;
}

// Runs `l` (one thread) through `entry` on host copies of its arrays and
// sets each kReference array's expected bytes to what the CPU left there.
absl::Status RunReference(const abi::CompiledKernel& k, Launch& l) {
  std::vector<uint64_t> words(k.layout.args_size / 8 + 2, 0);
  auto* block = reinterpret_cast<uint8_t*>(words.data());
  std::vector<std::string> buffers;  // stable: reserved below
  buffers.reserve(l.arrays.size() + 16);
  std::vector<std::pair<ArrayArg*, std::string*>> compared;
  for (const abi::ParamLayout& p : k.layout.params) {
    bool found = false;
    for (ArrayArg& a : l.arrays) {
      if (a.param != p.name) continue;
      buffers.push_back(a.init);
      testing::WriteArrayDescriptor(block + p.offset, buffers.back().data(), a.shape[0], p.type->element()->size());
      if (a.rule == Rule::kReference) compared.emplace_back(&a, &buffers.back());
      found = true;
    }
    for (ScalarArg& s : l.scalars) {
      if (s.param != p.name) continue;
      std::memcpy(block + p.offset, s.bytes.data(), s.bytes.size());
      for (const ArrayRef& r : s.refs) {
        if (buffers.size() == buffers.capacity()) return absl::InternalError("too many arrays");
        buffers.push_back(r.init);
        testing::WriteArrayDescriptor(block + p.offset + r.at, buffers.back().data(), r.shape[0], r.elem_bytes);
      }
      found = true;
    }
    if (!found) return absl::InternalError(absl::StrCat("no argument for parameter ", p.name));
  }
  wp::launch_ctx ctx{};
  ctx.bounds.ndim = 1;
  ctx.bounds.shape[0] = 1;
  ctx.bounds.size = 1;
  k.cpu_entry(&ctx, block, 0, 1);
  if (ctx.fault.flag)
    return absl::InternalError(absl::StrCat("the CPU entry faulted (kind ", ctx.fault.kind, ", line ", ctx.fault.line, ")"));
  for (auto& [a, bytes] : compared) a->expect = *bytes;
  return absl::OkStatus();
}

// Kernel names (hence CUDA entries) unique across modules: the self-test
// links several modules' CPU entries into one library.
void UniqueKernelNames(GeneratedModule& g, int index) {
  const std::string prefix = absl::StrCat("m", index, "_");
  for (v1::Function& f : *g.proto.mutable_functions())
    if (f.kind() == v1::FUNCTION_KERNEL) f.set_name(prefix + f.name());
  for (testing::KernelInfo& k : g.kernels) k.name = prefix + k.name;
}

absl::StatusOr<CheckCase> ModuleCase(const GeneratedModule& g, int index, compiler::Compiler& cpu) {
  CheckCase c;
  c.name = absl::StrCat("overloads_", index);
  c.what = absl::StrCat("module ", index, " of every overload: ", g.calls, " calls in ", g.kernels.size(),
                        " kernels, each compared with its CPU entry");
  c.proto = g.proto;
  c.compressed = true;
  auto module = ir::ModuleFromProto(g.proto);
  if (!module.ok()) return module.status();
  auto compiled = cpu.Compile(**module, abi::Target::kCpu);
  if (!compiled.ok()) return compiled.status();
  if (!compiled->failures.empty())
    return absl::InternalError(absl::StrCat(c.name, ": sema refused ", compiled->failures[0].message));

  std::vector<std::string> inputs;
  for (const testing::InputArray& in : g.inputs) inputs.push_back(Encoded(in.type, in.values));
  for (const testing::KernelInfo& info : g.kernels) {
    if (info.prints) continue;
    const abi::CompiledKernel* k = compiled->module->FindKernel(info.name);
    if (k == nullptr) return absl::InternalError(absl::StrCat(c.name, ": no kernel ", info.name));
    if (c.kernel.empty()) c.kernel = info.name;
    Launch l;
    l.name = info.name;
    l.kernel = info.name;
    l.what = info.calls.empty() ? "" : info.calls.front().substr(0, 120);
    if (info.calls.size() > 1) absl::StrAppend(&l.what, " (+", info.calls.size() - 1, " more)");
    l.dim = {1};
    l.threads_per_block = 32;
    // The GPU's approximate division (div_approx: div.approx.f32, and for
    // float64 an approximate reciprocal) is exact division on the CPU, as in
    // Warp: results agree to about float32's precision.
    double rtol = 0;
    for (const std::string& call : info.calls)
      if (call.rfind("div_approx", 0) == 0) rtol = 1e-5;
    for (const abi::ParamLayout& p : k->layout.params) {
      if (p.name.rfind("in_", 0) == 0) {
        const int n = std::stoi(p.name.substr(3));
        // Atomics may write their array arguments: compared too.
        l.arrays.push_back(ArrayArg{p.name, {static_cast<int64_t>(g.inputs[n].values.size())}, inputs[n],
                                    Rule::kReference, {}, rtol, 0, 16});
      } else if (p.name.rfind("out_", 0) == 0) {
        const int n = std::stoi(p.name.substr(4));
        const int64_t slots = std::max(g.outputs[n].slots, 1);
        l.arrays.push_back(ArrayArg{p.name, {slots}, std::string(slots * g.outputs[n].type->size(), '\0'),
                                    Rule::kReference, {}, rtol, 0, 16});
      } else if (p.name == "s" && p.type->is_struct()) {
        ScalarArg s{p.name, std::string(p.size, '\0'), {}};
        for (const testing::StructMemberSpec& m : g.members) {
          const types::Member* at = p.type->FindMember(m.name);
          if (at == nullptr) return absl::InternalError(absl::StrCat("struct parameter has no member ", m.name));
          if (m.input >= 0) {
            s.refs.push_back(ArrayRef{static_cast<uint32_t>(at->offset),
                                      {static_cast<int64_t>(g.inputs[m.input].values.size())},
                                      static_cast<uint32_t>(g.inputs[m.input].type->size()), inputs[m.input]});
          } else {
            testing::EncodeValue(m.type, m.value, reinterpret_cast<uint8_t*>(s.bytes.data()) + at->offset);
          }
        }
        l.scalars.push_back(std::move(s));
      } else {
        return absl::InternalError(absl::StrCat(c.name, ": unexpected parameter ", p.name));
      }
    }
    if (auto st = RunReference(*k, l); !st.ok())
      return absl::InternalError(absl::StrCat(c.name, "/", info.name, ": ", st.message()));
    c.launches.push_back(std::move(l));
  }
  return c;
}

}  // namespace

absl::StatusOr<std::vector<CheckCase>> OverloadCases(int first_module, int modules) {
  static const testing::Catalog* catalog = new testing::Catalog(testing::BuildCatalog());
  std::vector<std::vector<const testing::CallCase*>> cut;
  for (const testing::CallCase& c : catalog->calls) {
    if (cut.empty() || cut.back().size() >= kCallsPerModule) cut.emplace_back();
    cut.back().push_back(&c);
  }
  compiler::Compiler::Options o;
  o.compile_workers = 1;
  auto cpu = compiler::Compiler::Create(o);
  if (!cpu.ok()) return cpu.status();
  std::vector<CheckCase> cases;
  const int end = modules < 0 ? static_cast<int>(cut.size()) : std::min<int>(cut.size(), first_module + modules);
  std::fprintf(stderr, "gpu_check_gen: overload modules %d to %d of %zu (%zu calls)\n", first_module, end - 1,
               cut.size(), catalog->calls.size());
  for (int i = first_module; i < end; ++i) {
    GeneratedModule g = testing::BuildModule(cut[i], absl::StrCat("gpu_check_overloads_", i));
    UniqueKernelNames(g, i);
    auto c = ModuleCase(g, i, **cpu);
    if (!c.ok()) return c.status();
    cases.push_back(*std::move(c));
  }
  return cases;
}

}  // namespace warpd::gpu_check
