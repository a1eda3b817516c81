// The every-overload generator test (issue 24): every overload of the
// builtin table, in every concrete binding up to a small bound and with
// every argument form (compiler/testing/overload_generator.h), compiles
// through the CPU path and through NVRTC + ptxas, runs on the CPU without a
// fault, and produces finite results that agree across argument forms. A
// program the front end accepts must never fail later: any compile error of
// a generated module fails the test, naming the overload, the binding and
// the forms of the calls that fail (found by bisecting the module).
//
// The calls are cut into modules of kCallsPerModule and the modules into
// kShards gtest instances (ctest runs them as separate tests, in parallel
// with -j). Debugging aids (environment): WARPD_OVERLOADS_MODULE=<i> runs
// module i only (in its shard, i % kShards); WARPD_OVERLOADS_DUMP=<dir>
// writes each module's generated source there; WARPD_OVERLOADS_PROFILE=1
// times each overload's calls alone; WARPD_OVERLOADS_WIDE=1 explores wider
// bindings (CatalogOptions::wide; slower, not for CI). The sanitizer build
// compiles for the CPU only (WARPD_OVERLOADS_CPU_ONLY, compiler/CMakeLists.txt).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "common/str_cat.h"
#include "compiler/builtins/builtins.h"
#include "compiler/compiler.h"
#include "compiler/ir/from_proto.h"
#include "compiler/testing/overload_generator.h"
#if WARPD_WITH_CUDA
#include "compiler/backend/cuda_nvrtc.h"
#endif
#include "warpd/native/array.h"
#include "warpd/native/launch.h"

namespace warpd::compiler {
namespace {

using namespace warpd::testing;
using types::ScalarKind;
using types::TypeRef;

constexpr int kShards = 10;
constexpr int kCallsPerModule = 250;
constexpr int kCudaArch = 90;  // what Compiler's verify_cuda checks
constexpr int kMaxReported = 12;

const Catalog& TheCatalog() {
  static const Catalog* c = [] {
    CatalogOptions o;
    o.wide = std::getenv("WARPD_OVERLOADS_WIDE") != nullptr;  // exploration (CatalogOptions::wide)
    return new Catalog(BuildCatalog(o));
  }();
  return *c;
}

// The modules: the catalog's calls in order, cut every kCallsPerModule.
std::vector<std::vector<const CallCase*>> Modules() {
  std::vector<std::vector<const CallCase*>> out;
  for (const CallCase& c : TheCatalog().calls) {
    if (out.empty() || out.back().size() >= static_cast<size_t>(kCallsPerModule)) out.emplace_back();
    out.back().push_back(&c);
  }
  return out;
}

double MsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Timing {
  double generate_ms = 0, cpu_ms = 0, nvrtc_ms = 0, ptxas_ms = 0, run_ms = 0;
};

bool CudaAvailable() {
#if WARPD_WITH_CUDA
  static const bool ok = Nvrtc::Load().ok();
  return ok;
#else
  return false;
#endif
}

Compiler& CpuCompiler() {
  static Compiler* c = [] {
    Compiler::Options o;
    o.compile_workers = 1;
    auto made = Compiler::Create(o);
    if (!made.ok()) {
      std::fprintf(stderr, "%s\n", std::string(made.status().message()).c_str());
      std::abort();
    }
    return made->release();
  }();
  return *c;
}

// One generated module through both compilers: `error` is empty when both
// accept every kernel, else says what went wrong.
struct Compiled {
  std::string error;
  std::shared_ptr<const CompiledModule> module;
};

Compiled CompileBoth(const GeneratedModule& g, Timing* t) {
  Compiled out;
  if (const char* dir = std::getenv("WARPD_OVERLOADS_DUMP")) {
    auto m = ir::ModuleFromProto(g.proto);
    if (m.ok()) {
      auto gen = Compiler::Generate(**m);
      if (gen.ok()) std::ofstream(Cat(dir, "/", g.proto.name(), ".cc")) << gen->source;
    }
  }
  auto m = ir::ModuleFromProto(g.proto);
  if (!m.ok()) return {Cat("from_proto: ", m.status().ToString()), nullptr};
  auto t0 = std::chrono::steady_clock::now();
  auto r = CpuCompiler().Compile(**m, Target::kCpu);
  if (t) t->cpu_ms += MsSince(t0);
  if (!r.ok()) return {Cat("CPU compile: ", r.status().ToString()), nullptr};
  if (!r->failures.empty()) {
    std::string e = "sema refused kernels:";
    for (const auto& f : r->failures) CatAppend(&e, "\n  ", f.message);
    return {e, nullptr};
  }
  out.module = r->module;
#if WARPD_WITH_CUDA && !WARPD_OVERLOADS_CPU_ONLY  // see compiler/CMakeLists.txt
  if (CudaAvailable()) {
    auto t1 = std::chrono::steady_clock::now();
    auto m2 = ir::ModuleFromProto(g.proto);
    auto gen = Compiler::Generate(**m2);
    if (!gen.ok()) return {Cat("CUDA generate: ", gen.status().ToString()), nullptr};
    auto nvrtc = Nvrtc::Load();
    auto ptx = (*nvrtc)->CompileToPtx(gen->source, Cat(g.proto.name(), ".cu"), kCudaArch);
    if (!ptx.ok()) return {Cat("NVRTC: ", ptx.status().ToString()), nullptr};
    if (t) t->nvrtc_ms += MsSince(t1);
    auto t2 = std::chrono::steady_clock::now();
    if (auto st = VerifyPtx(*ptx, kCudaArch); !st.ok()) return {Cat("ptxas: ", st.ToString()), nullptr};
    if (t) t->ptxas_ms += MsSince(t2);
  }
#endif
  return out;
}

// Finds the calls of `calls` that fail to compile on their own (bisecting),
// at most kMaxReported of them.
void Bisect(const std::vector<const CallCase*>& calls, std::vector<std::string>* found, int* compiles) {
  if (found->size() >= static_cast<size_t>(kMaxReported) || calls.empty()) return;
  ++*compiles;
  Compiled c = CompileBoth(BuildModule(calls, Cat("bisect_", *compiles)), nullptr);
  if (c.error.empty()) return;
  if (calls.size() == 1) {
    std::string e = c.error;
    if (e.size() > 3000) e = e.substr(0, 3000) + "...";
    found->push_back(Cat(calls[0]->what, "\n    ", e));
    return;
  }
  const size_t half = calls.size() / 2;
  Bisect({calls.begin(), calls.begin() + half}, found, compiles);
  Bisect({calls.begin() + half, calls.end()}, found, compiles);
}

// ------------------------------------------------------------------ running

struct Buffers {
  std::vector<std::vector<uint8_t>> in, out;
};

Buffers MakeBuffers(const GeneratedModule& g) {
  Buffers b;
  for (const InputArray& in : g.inputs) {
    std::vector<uint8_t> bytes(in.values.size() * in.type->size());
    for (size_t i = 0; i < in.values.size(); ++i)
      EncodeValue(in.type, in.values[i], bytes.data() + i * in.type->size());
    b.in.push_back(std::move(bytes));
  }
  for (const OutputArray& out : g.outputs) b.out.emplace_back(std::max(out.slots, 1) * out.type->size(), 0);
  return b;
}

// The argument block of one kernel, from its layout (as the runtime packs it).
std::vector<uint64_t> ArgumentBlock(const GeneratedModule& g, const abi::KernelLayout& layout, Buffers& b,
                                    std::string* error) {
  std::vector<uint64_t> words((layout.args_size + 7) / 8 + 1, 0);
  auto* block = reinterpret_cast<uint8_t*>(words.data());
  for (const abi::ParamLayout& p : layout.params) {
    uint8_t* dst = block + p.offset;
    if (p.name.rfind("in_", 0) == 0) {
      const int n = std::atoi(p.name.c_str() + 3);
      WriteArrayDescriptor(dst, b.in[n].data(), static_cast<int64_t>(g.inputs[n].values.size()), g.inputs[n].type->size());
    } else if (p.name.rfind("out_", 0) == 0) {
      const int n = std::atoi(p.name.c_str() + 4);
      WriteArrayDescriptor(dst, b.out[n].data(), g.outputs[n].slots, g.outputs[n].type->size());
    } else if (p.name == "s" && p.type->is_struct()) {
      for (const StructMemberSpec& m : g.members) {
        const types::Member* at = p.type->FindMember(m.name);
        if (!at) {
          *error = Cat("struct parameter has no member ", m.name);
          continue;
        }
        if (m.input >= 0) {
          WriteArrayDescriptor(dst + at->offset, b.in[m.input].data(), static_cast<int64_t>(g.inputs[m.input].values.size()),
                          g.inputs[m.input].type->size());
        } else {
          EncodeValue(m.type, m.value, dst + at->offset);
        }
      }
    } else {
      *error = Cat("unexpected parameter ", p.name);
    }
  }
  return words;
}

// The scalars of a value (struct members included) as doubles; false for a
// component that is not finite (`finite` unset: not asked) or a bool that
// is neither 0 nor 1.
bool Components(TypeRef t, const uint8_t* p, std::vector<double>* out, std::string* bad) {
  if (t->is_struct()) {
    bool ok = true;
    for (const auto& m : t->members())
      if (!m.type->is_array()) ok &= Components(m.type, p + m.offset, out, bad);
    return ok;
  }
  const ScalarKind s = t->scalar();
  const size_t w = types::ScalarSize(s);
  const size_t n = t->size() / w;
  bool ok = true;
  for (size_t i = 0; i < n; ++i, p += w) {
    double v = 0;
    switch (s) {
      case ScalarKind::kBool:
        if (*p > 1) {
          ok = false;
          *bad = Cat("bool byte ", static_cast<int>(*p));
        }
        v = *p;
        break;
      case ScalarKind::kInt8: v = *reinterpret_cast<const int8_t*>(p); break;
      case ScalarKind::kUInt8: v = *p; break;
      case ScalarKind::kInt16: {
        int16_t x;
        std::memcpy(&x, p, 2);
        v = x;
        break;
      }
      case ScalarKind::kUInt16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        v = x;
        break;
      }
      case ScalarKind::kInt32: {
        int32_t x;
        std::memcpy(&x, p, 4);
        v = x;
        break;
      }
      case ScalarKind::kUInt32: {
        uint32_t x;
        std::memcpy(&x, p, 4);
        v = x;
        break;
      }
      case ScalarKind::kInt64: {
        int64_t x;
        std::memcpy(&x, p, 8);
        v = static_cast<double>(x);
        break;
      }
      case ScalarKind::kUInt64: {
        uint64_t x;
        std::memcpy(&x, p, 8);
        v = static_cast<double>(x);
        break;
      }
      case ScalarKind::kFloat16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        v = HalfToFloat(x);
        break;
      }
      case ScalarKind::kFloat32: {
        float x;
        std::memcpy(&x, p, 4);
        v = x;
        break;
      }
      case ScalarKind::kFloat64: std::memcpy(&v, p, 8); break;
      case ScalarKind::kBFloat16: {
        uint16_t x;
        std::memcpy(&x, p, 2);
        const uint32_t bits = static_cast<uint32_t>(x) << 16;
        float f;
        std::memcpy(&f, &bits, 4);
        v = f;
        break;
      }
    }
    if (types::IsFloat(s) && !std::isfinite(v)) {
      ok = false;
      *bad = Cat("component ", out->size(), " is ", v);
    }
    out->push_back(v);
  }
  return ok;
}

double Tolerance(TypeRef t) {
  ScalarKind s = t->is_struct() ? ScalarKind::kFloat16 : t->scalar();  // a struct: its least precise member (no bfloat16 members)
  switch (s) {
    case ScalarKind::kFloat16: return 2e-3;
    case ScalarKind::kBFloat16: return 2e-2;
    case ScalarKind::kFloat32: return 1e-5;
    case ScalarKind::kFloat64: return 1e-12;
    default: return 0;
  }
}

struct RunStats {
  int kernels = 0;
  int checked = 0;
  int agreements = 0;
};

// Launches every kernel of the module on one CPU thread and checks the
// manifest; failures are appended to `errors`.
// Runs `entry` as a launch of one thread, its print records going to `print_words`.
wp::launch_ctx RunOneThread(abi::CpuKernelFn entry, const void* block, std::vector<uint64_t>& print_words) {
  wp::launch_ctx ctx{};
  ctx.bounds.ndim = 1;
  ctx.bounds.shape[0] = 1;
  ctx.bounds.size = 1;
  ctx.output.data = reinterpret_cast<uint8_t*>(print_words.data());
  ctx.output.capacity = print_words.size() * 8;
  entry(&ctx, block, 0, 1);
  return ctx;
}

void RunAndCheck(const GeneratedModule& g, const CompiledModule& m, RunStats* st, std::vector<std::string>* errors) {
  Buffers b = MakeBuffers(g);
  std::vector<uint64_t> print_words(1 << 15, 0);
  for (const KernelInfo& k : g.kernels) {
    const CompiledKernel* ck = m.FindKernel(k.name);
    if (!ck) {
      errors->push_back(Cat("kernel ", k.name, " is missing from the compiled module"));
      continue;
    }
    std::string error;
    std::vector<uint64_t> args = ArgumentBlock(g, ck->layout, b, &error);
    if (!error.empty()) errors->push_back(Cat(k.name, ": ", error));
    const wp::launch_ctx ctx = RunOneThread(ck->cpu_entry, args.data(), print_words);
    ++st->kernels;
    if (ctx.fault.flag) {
      // Line L is the module's L-th call.
      const int line = ctx.fault.line;
      std::string call = "?";
      int seen = 0;
      for (const KernelInfo& kk : g.kernels) {
        if (line > seen && line <= seen + static_cast<int>(kk.calls.size())) call = kk.calls[line - seen - 1];
        seen += static_cast<int>(kk.calls.size());
      }
      errors->push_back(Cat("kernel ", k.name, " faulted (kind ", ctx.fault.kind, ", index ", ctx.fault.index,
                            ", extent ", ctx.fault.extent, ") in ", call));
    }
    // expect_eq/expect_near/expect_neq were given arguments they accept:
    // only print cases write records.
    if (!k.prints && ctx.output.used != 0)
      errors->push_back(Cat("kernel ", k.name, " wrote ", ctx.output.used,
                            " bytes of print records (an expect_* failed); calls: ", Join(k.calls, " | ")));
  }
  std::map<std::pair<int, int>, std::pair<std::vector<double>, const Expectation*>> first;
  for (const Expectation& e : g.expectations) {
    const OutputArray& out = g.outputs[e.output];
    const uint8_t* p = b.out[e.output].data() + static_cast<size_t>(e.slot) * out.type->size();
    std::vector<double> comps;
    std::string bad;
    const bool ok = Components(out.type, p, &comps, &bad);
    ++st->checked;
    if (!ok && (e.finite || bad.rfind("bool", 0) == 0)) errors->push_back(Cat(e.what, ": ", bad));
    if (e.exact_float) {
      const double want = *e.exact_float, got = comps[0];
      const bool same = std::isnan(want) ? std::isnan(got) : got == want && std::signbit(got) == std::signbit(want);
      if (!same) errors->push_back(Cat(e.what, ": ", got, " instead of ", want));
    }
    if (e.exact_int) {
      int64_t got = 0;
      if (out.type->scalar() == ScalarKind::kUInt64 || out.type->scalar() == ScalarKind::kInt64) {
        std::memcpy(&got, p, 8);
      } else {
        got = static_cast<int64_t>(comps[0]);
      }
      if (got != *e.exact_int) errors->push_back(Cat(e.what, ": ", got, " instead of ", *e.exact_int));
    }
    if (e.agreement_group < 0 || !ok) continue;
    auto [it, inserted] = first.try_emplace({e.agreement_group, e.result_index}, comps, &e);
    if (inserted) continue;
    ++st->agreements;
    const double tol = Tolerance(out.type);
    for (size_t i = 0; i < comps.size(); ++i) {
      const double a = it->second.first[i], c = comps[i];
      if (std::fabs(a - c) > tol * (1 + std::fabs(a))) {
        errors->push_back(Cat(e.what, ": component ", i, " is ", c, " but ", a, " in ", it->second.second->what));
        break;
      }
    }
  }
}

// WARPD_OVERLOADS_PROFILE: compiles each kernel group (an overload's calls)
// of a module alone and prints the times, to find what makes a shard slow.
void Profile(const std::vector<const CallCase*>& calls) {
  std::map<std::string, std::vector<const CallCase*>> groups;
  std::vector<std::string> order;
  for (const CallCase* c : calls) {
    if (!groups.count(c->kernel_group)) order.push_back(c->kernel_group);
    groups[c->kernel_group].push_back(c);
  }
  for (const std::string& name : order) {
    Timing t;
    Compiled c = CompileBoth(BuildModule(groups[name], Cat("profile_", name)), &t);
    std::printf("[profile] %s (%zu calls): CPU %.2f s, NVRTC %.2f s, ptxas %.2f s%s\n",
                groups[name][0]->what.substr(0, groups[name][0]->what.find(" with")).c_str(), groups[name].size(),
                t.cpu_ms / 1000, t.nvrtc_ms / 1000, t.ptxas_ms / 1000, c.error.empty() ? "" : " (fails)");
  }
}

// ------------------------------------------------------------------- tests

TEST(OverloadsTest, CatalogCoversTheWholeTable) {
  const Catalog& c = TheCatalog();
  int regular = 0;
  std::set<std::string> hooks;
  for (const auto& o : builtins::Table()) {
    if (o.hook)
      hooks.insert(std::string(o.name));
    else if (o.form != builtins::Form::kClient && !QueriesObjects(o))
      ++regular;
  }
  // Every regular overload (but object queries, listed as skipped) has at
  // least one binding that resolves to it.
  EXPECT_EQ(c.overloads, regular);
  // Every hook builtin has hand-written calls or a reason.
  std::set<std::string> handled(c.hooks_covered.begin(), c.hooks_covered.end());
  for (const auto& [name, why] : HookSkips()) handled.insert(name);
  for (const std::string& h : hooks) EXPECT_TRUE(handled.count(h)) << "hook builtin " << h << " has no generated calls";
  std::printf(
      "[overloads] %d regular overloads, %d bindings, %zu hook builtins with %zu calls; %zu calls in %zu "
      "modules; %zu skipped\n",
      c.overloads, c.bindings, c.hooks_covered.size(),
      std::count_if(c.calls.begin(), c.calls.end(), [](const CallCase& x) { return x.kernel_group[0] == 'h'; }),
      c.calls.size(), Modules().size(), c.skipped.size());
  for (const std::string& s : c.skipped) std::printf("[overloads] skipped %s\n", s.c_str());
  // Bindings the patterns admit but an earlier overload of the name takes:
  // reachable only through that one (listed, not errors).
  for (const std::string& s : c.shadowed) std::printf("[overloads] shadowed: %s\n", s.c_str());
}

class EveryOverload : public ::testing::TestWithParam<int> {};

TEST_P(EveryOverload, CompilesEverywhereAndRunsOnTheCpu) {
  const int shard = GetParam();
  const auto modules = Modules();
  Timing t;
  RunStats st;
  int calls = 0, compiled_modules = 0;
  std::vector<std::string> errors;
  const char* only = std::getenv("WARPD_OVERLOADS_MODULE");
  for (size_t i = shard; i < modules.size(); i += kShards) {
    if (only && std::to_string(i) != only) continue;
    auto t0 = std::chrono::steady_clock::now();
    if (std::getenv("WARPD_OVERLOADS_PROFILE")) {
      Profile(modules[i]);
      continue;
    }
    GeneratedModule g = BuildModule(modules[i], Cat("overloads_", i));
    t.generate_ms += MsSince(t0);
    Timing mt;
    Compiled c = CompileBoth(g, &mt);
    std::printf("[overloads] module %zu: %d calls from %s to %s; CPU %.1f s, NVRTC %.1f s, ptxas %.1f s\n", i, g.calls,
                modules[i].front()->what.substr(0, modules[i].front()->what.find('(')).c_str(),
                modules[i].back()->what.substr(0, modules[i].back()->what.find('(')).c_str(), mt.cpu_ms / 1000,
                mt.nvrtc_ms / 1000, mt.ptxas_ms / 1000);
    t.cpu_ms += mt.cpu_ms;
    t.nvrtc_ms += mt.nvrtc_ms;
    t.ptxas_ms += mt.ptxas_ms;
    if (!c.error.empty()) {
      std::vector<std::string> found;
      int compiles = 0;
      Bisect(modules[i], &found, &compiles);
      std::string msg = Cat("module ", i, " failed to compile:\n", c.error.substr(0, 4000), "\nfailing calls (",
                            compiles, " bisection compiles):");
      for (const std::string& f : found) CatAppend(&msg, "\n  - ", f);
      ADD_FAILURE() << msg;
      continue;
    }
    ++compiled_modules;
    calls += g.calls;
    auto t1 = std::chrono::steady_clock::now();
    RunAndCheck(g, *c.module, &st, &errors);
    t.run_ms += MsSince(t1);
  }
  for (size_t i = 0; i < errors.size() && i < 50; ++i) ADD_FAILURE() << errors[i];
  if (errors.size() > 50) ADD_FAILURE() << errors.size() - 50 << " more errors";
  std::printf(
      "[overloads] shard %d/%d: %d modules, %d calls, %d kernels run, %d results checked (%d compared "
      "across forms); generate %.0f ms, CPU compile %.1f s, NVRTC %.1f s + ptxas %.1f s%s, run %.0f ms\n",
      shard, kShards, compiled_modules, calls, st.kernels, st.checked, st.agreements, t.generate_ms, t.cpu_ms / 1000,
      t.nvrtc_ms / 1000, t.ptxas_ms / 1000, CudaAvailable() ? "" : " (NVRTC not installed)", t.run_ms);
}

// The backward pass of every generated module (issue 25): compiled with its
// adjoints (the CPU path; e2e compiles backward modules with NVRTC too), and
// each kernel's adjoint run once, the gradients of its arrays being other
// buffers of the same values. A compile error or a fault fails; a kernel
// left without an adjoint must say which builtin warpd cannot differentiate
// yet (listed in the output, not an error).
TEST_P(EveryOverload, AdjointsCompileAndRunOnTheCpu) {
#if WARPD_OVERLOADS_CPU_ONLY
  // The sanitizer build: its instrumented part (the compiler pipeline) is the
  // forward test's; the generated code is not instrumented, and this pass
  // costs about ten minutes of compile time there.
  GTEST_SKIP() << "adjoints of every overload: run by the plain build only";
#endif
  const int shard = GetParam();
  const auto modules = Modules();
  int compiled = 0, run = 0;
  double cpu_ms = 0;
  std::map<std::string, int> without;  // why -> kernels
  const char* only = std::getenv("WARPD_OVERLOADS_MODULE");
  for (size_t i = shard; i < modules.size(); i += kShards) {
    if (only && std::to_string(i) != only) continue;
    GeneratedModule g = BuildModule(modules[i], Cat("overloads_adj_", i));
    g.proto.set_backward(true);
    auto m = ir::ModuleFromProto(g.proto);
    ASSERT_TRUE(m.ok()) << "module " << i << ": " << m.status();
    auto t0 = std::chrono::steady_clock::now();
    auto r = CpuCompiler().Compile(**m, Target::kCpu);
    cpu_ms += MsSince(t0);
    if (!r.ok()) {
      ADD_FAILURE() << "module " << i << " with adjoints failed to compile: " << r.status().ToString().substr(0, 4000);
      continue;
    }
    ++compiled;
    Buffers b = MakeBuffers(g), grads = MakeBuffers(g);
    for (const KernelInfo& k : g.kernels) {
      const CompiledKernel* ck = r->module->FindKernel(k.name);
      ASSERT_NE(ck, nullptr) << k.name;
      if (ck->cpu_adjoint == nullptr) {
        EXPECT_NE(ck->adjoint_error.find("cannot differentiate"), std::string::npos) << ck->adjoint_error;
        const std::string& e = ck->adjoint_error;
        const size_t at = e.find("differentiate ");
        ++without[at == std::string::npos ? e : e.substr(at + 14, e.find('(', at) - at - 14)];
        continue;
      }
      std::string error;
      std::vector<uint64_t> fwd = ArgumentBlock(g, ck->layout, b, &error);
      std::vector<uint64_t> adj = ArgumentBlock(g, ck->layout, grads, &error);
      ASSERT_TRUE(error.empty()) << error;
      // The forward block, then the adjoints' block at args_size (docs/launch_abi.md).
      std::vector<uint64_t> aligned((2 * ck->layout.args_size + 16) / 8, 0);
      auto* block = reinterpret_cast<uint8_t*>(aligned.data());
      std::memcpy(block, fwd.data(), ck->layout.args_size);
      std::memcpy(block + ck->layout.args_size, adj.data(), ck->layout.args_size);
      std::vector<uint64_t> print_words(1 << 12, 0);
      const wp::launch_ctx ctx = RunOneThread(ck->cpu_adjoint, aligned.data(), print_words);
      ++run;
      EXPECT_EQ(ctx.fault.flag, 0) << "the adjoint of kernel " << k.name << " faulted (kind " << ctx.fault.kind
                                   << ", line " << ctx.fault.line << "): " << Join(k.calls, " | ");
    }
  }
  std::printf("[overloads] adjoints, shard %d/%d: %d modules compiled (CPU %.1f s), %d kernels' adjoints run\n", shard,
              kShards, compiled, cpu_ms / 1000, run);
  for (const auto& [why, n] : without)
    std::printf("[overloads]   %d kernel(s) without an adjoint: cannot differentiate %s\n", n, why.c_str());
}

INSTANTIATE_TEST_SUITE_P(Overloads, EveryOverload, ::testing::Range(0, kShards));

}  // namespace
}  // namespace warpd::compiler
