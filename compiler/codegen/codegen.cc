#include "compiler/codegen/codegen.h"

#include <set>
#include <string>
#include <vector>

#include "compiler/builtins/builtins.h"
#include "compiler/codegen/adjoint.h"
#include "compiler/codegen/client_text.h"
#include "compiler/codegen/function_emitter.h"
#include "compiler/codegen/layout.h"
#include "compiler/codegen/lane_blocks.h"
#include "compiler/codegen/thread_index.h"
#include "compiler/tir/tir.h"

namespace warpd::codegen {
namespace {

using namespace internal;  // NOLINT: codegen's own internals

std::string FuncSignature(const ir::Function& f) {
  std::string sig = "static WP_DEVICE_FUNC " + f.return_type->CppName() + " " + FuncSymbol(f.name) +
                    "(wp::launch_ctx* ctx, wp::int64 _tid";
  for (const auto& p : f.params) sig += ", " + p.type->CppName() + " " + Local(p.name);
  return sig + ")";
}

void EmitKernel(const tir::Module& m, const tir::Function& f, Writer& w) {
  const ir::Function& k = *f.source;
  compiler::KernelLayout layout = compiler::ComputeLayout(*m.source, k);
  std::string args = ArgsStruct(k.name);
  // No file name here (client_text.h): the user's lines are numbers, and a
  // kernel moved to another file still hits the cache.
  w.Line("// kernel " + k.name + " (line " + std::to_string(layout.line) + ")");
  w.Open("struct " + args + " {");
  for (const auto& p : k.params) w.Line(p.type->CppName() + " p_" + p.name + ";");
  if (k.params.empty()) w.Line("wp::int32 unused_;");
  w.Close("};");
  // NVRTC has no __builtin_offsetof; the CPU compile pins every offset, and
  // nvcc lays structs out like the host compiler.
  w.Line("#if !WP_CUDA");
  for (const auto& p : layout.params)
    w.Line("static_assert(__builtin_offsetof(" + args + ", p_" + p.name + ") == " + std::to_string(p.offset) +
           ", " + CppStringLiteral("launch ABI: offset of " + p.name) + ");");
  w.Line("#endif");
  if (!k.params.empty())
    w.Line("static_assert(sizeof(" + args + ") == " + std::to_string(layout.args_size) +
           ", \"launch ABI: argument block size\");");
  w.Line("");
  w.Open("static WP_DEVICE_FUNC void " + BodySymbol(k.name) + "(wp::launch_ctx* ctx, const " + args +
         "& args, wp::int64 _tid) {");
  for (const auto& p : k.params) w.Line(p.type->CppName() + " " + Local(p.name) + " = args.p_" + p.name + ";");
  FunctionEmitter(m, f, w).Body();
  w.Close();
  w.Line("");
  w.Line("#if !WP_CUDA");
  // A block of thread ids within every thread-indexed array runs a body
  // whose thread-indexed accesses are unchecked (thread_index.h).
  const ThreadIndexed fast = FindThreadIndexed(f);
  const bool lane_blocked = RunsLaneBlocked(f, fast);
  if (!fast.accesses.empty()) {
    w.Open("static WP_DEVICE_FUNC void " + BodySymbol(k.name) + "_in_block(wp::launch_ctx* ctx, const " + args +
           "& args, wp::int64 _tid) {");
    for (const auto& p : k.params) w.Line(p.type->CppName() + " " + Local(p.name) + " = args.p_" + p.name + ";");
    FunctionEmitter(m, f, w, &fast.accesses).Body();
    w.Close();
    w.Line("");
  }
  if (lane_blocked) {
    w.Open("static WP_DEVICE_FUNC void " + BodySymbol(k.name) + "_lanes(wp::launch_ctx* ctx, const " + args +
           "& args, wp::int32 _t0) {");
    for (const auto& p : k.params) w.Line(p.type->CppName() + " " + Local(p.name) + " = args.p_" + p.name + ";");
    FunctionEmitter(m, f, w, &fast.accesses, /*lanes=*/true).Body();
    w.Close();
    w.Line("");
  }
  w.Open("extern \"C\" void " + CpuEntrySymbol(k.name) +
         "(wp::launch_ctx* ctx, const void* args, wp::int64 begin, wp::int64 end) {");
  // A copy: stores through array pointers cannot alias it, so descriptors
  // stay in registers.
  w.Line("const " + args + " a = *(const " + args + "*)args;");
  if (!fast.accesses.empty()) {
    // Thread ids below fast_end index every thread-indexed array in bounds
    // (0 when one of them is not contiguous).
    std::string contiguous, length;
    for (const std::string& name : fast.arrays) {
      contiguous += (contiguous.empty() ? "" : " && ") + std::string("wp::contiguous(a.p_") + name + ")";
      length += (length.empty() ? "" : ", ") + std::string("a.p_") + name + ".shape[0]";
    }
    w.Line("const wp::int64 fast_end = (" + contiguous + ") ? wp::min_length({" + length + "}) : 0;");
  }
  // Faults and cancels are polled once per block of thread ids, not per id:
  // the poll is two atomic loads, and per id it cost about a third of a
  // memory-bound kernel's time. Loops inside the body still poll per iteration.
  w.Open("for (wp::int64 block = begin; block < end; block += 256) {");
  w.Line("if (WP_UNLIKELY(wp::should_stop(ctx))) return;");
  w.Line("const wp::int64 block_end = end - block < 256 ? end : block + 256;");
  if (!fast.accesses.empty()) {
    // In a fast block, an int32 counter (thread ids there are below an
    // array length, an int32) keeps indices affine for the vectorizer.
    w.Open("if (block_end <= fast_end) {");
    w.Line("wp::int32 t = (wp::int32)block;");
    // kLanes ids at a time, vectorized across them (lane_blocks.h).
    if (lane_blocked) {
      w.Line("for (; t + " + std::to_string(kLanes) + " <= (wp::int32)block_end; t += " + std::to_string(kLanes) +
             ") " + BodySymbol(k.name) + "_lanes(ctx, a, t);");
    }
    w.Line("for (; t < (wp::int32)block_end; ++t) " + BodySymbol(k.name) + "_in_block(ctx, a, t);");
    w.Line("continue;");
    w.Close();
  }
  w.Line("for (wp::int64 t = block; t < block_end; ++t) " + BodySymbol(k.name) + "(ctx, a, t);");
  w.Close();
  w.Close();
  w.Line("#else");
  // CUDA passes kernel parameters in a constant bank of at most 32764
  // bytes; a larger block (big struct arguments) travels in device memory
  // and the entry takes its address (docs/launch_abi.md).
  const bool by_pointer = layout.args_size + sizeof(void*) > kMaxCudaParamBytes;
  w.Open("extern \"C\" __global__ void " + CudaEntrySymbol(k.name) + "(wp::launch_ctx* ctx, " +
         (by_pointer ? "const " + args + "* __restrict__ args" : args + " args") + ") {");
  w.Line("wp::grid_stride(ctx, [&](wp::int64 t) { " + BodySymbol(k.name) +
         (by_pointer ? "(ctx, *args, t); });" : "(ctx, args, t); });"));
  w.Close();
  w.Line("#endif");
  w.Line("");
}

}  // namespace

std::string CpuEntrySymbol(const std::string& kernel) { return "wpk_" + kernel + "_cpu"; }
std::string CudaEntrySymbol(const std::string& kernel) { return "wpk_" + kernel + "_cuda"; }

namespace {

// What a module needs from runtime/native and which structs it defines.
class ModuleUses : public tir::Visitor<ModuleUses> {
 public:
  explicit ModuleUses(const tir::Module& m) {
    for (const auto& f : m.functions) {
      if (!ir::IsEmitted(*f.source)) continue;
      for (const auto& v : f.vars) Type(v.type);
      if (f.source->return_type) Type(f.source->return_type);
      VisitBlock(f.body);
    }
  }
  const std::set<std::string>& headers() const { return headers_; }
  const std::vector<TypeRef>& structs() const { return structs_; }

  void VisitBuiltin(const tir::Builtin& i) {
    if (!i.overload->header.empty()) headers_.insert(std::string(i.overload->header));
  }
  // wp.grad() calls run adjoints (and the seed): the adjoint runtime.
  void VisitGrad(const tir::Grad& i) {
    if (i.overload && !i.overload->header.empty()) headers_.insert(std::string(i.overload->header));
    headers_.insert("warpd/native/adjoint/adj_codegen.h");
    grad_ = true;
  }
  bool grad() const { return grad_; }

 private:
  void Type(TypeRef t) {
    if (!t) return;
    switch (t->kind()) {
      case types::Kind::kMatrix: headers_.insert("warpd/native/mat.h"); break;
      case types::Kind::kQuat: headers_.insert("warpd/native/quat.h"); break;
      case types::Kind::kTransform: headers_.insert("warpd/native/transform.h"); break;
      case types::Kind::kArray: Type(t->element()); break;
      case types::Kind::kTuple:
        headers_.insert("warpd/native/tuple.h");
        for (TypeRef e : t->elements()) Type(e);
        break;
      case types::Kind::kStruct:
        for (TypeRef done : structs_)
          if (done == t) return;
        for (const auto& m : t->members()) Type(m.type);  // members first
        structs_.push_back(t);
        break;
      default: break;
    }
  }

  std::set<std::string> headers_;
  std::vector<TypeRef> structs_;
  bool grad_ = false;
};

void EmitStruct(TypeRef t, Writer& w) {
  w.Line("// struct " + t->struct_name());
  w.Open("struct " + t->CppName() + " {");
  for (const auto& m : t->members()) w.Line(m.type->CppName() + " m_" + m.name + ";");
  w.Close("};");
  w.Line("#if !WP_CUDA");
  for (const auto& m : t->members())
    w.Line("static_assert(__builtin_offsetof(" + t->CppName() + ", m_" + m.name + ") == " + std::to_string(m.offset) +
           ", \"struct layout\");");
  w.Line("#endif");
  w.Line("static_assert(sizeof(" + t->CppName() + ") == " + std::to_string(t->size()) + ", \"struct size\");");
  w.Line("");
}

}  // namespace

std::string GenerateModule(const tir::Module& module) {
  ModuleUses uses(module);
  Writer w;
  w.Line("// Generated by warpd codegen. Do not edit.");
  w.Line("#include \"warpd/native/builtin.h\"");
  for (const std::string& h : uses.headers()) w.Line("#include \"" + h + "\"");
  w.Line("");
  for (TypeRef t : uses.structs()) EmitStruct(t, w);
  for (const auto& f : module.functions)
    if (!f.is_kernel() && ir::IsEmitted(*f.source)) w.Line(FuncSignature(*f.source) + ";");
  // The adjoints wp.grad() calls run, defined with the module's adjoints.
  if (uses.grad()) w.Line(GradAdjointDeclarations(module));
  w.Line("");
  for (const auto& f : module.functions) {
    if (f.is_kernel() || !ir::IsEmitted(*f.source)) continue;
    w.Line("// function " + f.source->name + " (line " + std::to_string(f.source->span.line) + ")");
    w.Open(FuncSignature(*f.source) + " {");
    FunctionEmitter(module, f, w).Body();
    w.Close();
    w.Line("");
  }
  for (const auto& f : module.functions)
    if (f.is_kernel() && ir::IsEmitted(*f.source)) EmitKernel(module, f, w);
  return w.str();
}

}  // namespace warpd::codegen
