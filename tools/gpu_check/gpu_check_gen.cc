// gpu_check_gen OUT_DIR [--label TEXT]
//
// The host half of the GPU check (docs/architecture.md, Testing). For each
// case of cases.h it runs the compiler's front end and codegen
// (Compiler::Generate), compiles the module's CUDA source with NVRTC for
// compute_90, assembles the PTX with ptxas for sm_90, checks the CUDA entry's
// parameters in the PTX against the launch ABI, and writes into OUT_DIR:
//   checks.json          the cases in order, the generator's NVRTC, and the
//                        launch_ctx / array_t layouts it was built with
//   <case>.json          entry symbol (forward or adjoint), argument layout
//                        (an adjoint's second block as "adj:" parameters), launches: dims,
//                        inputs, expected outputs and fault record
//   <case>.ptx           NVRTC's PTX
//   src/<case>.cu        the generated source (for reading, and for the
//                        runner's self-test on the CPU)
//   data/*.bin           raw array bytes (inputs, expected outputs)
// scripts/gpu_check.py runs them on a GPU. Exit status 0, or 1 with a message.
#include <sys/stat.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include <zlib.h>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "compiler/backend/cuda_nvrtc.h"
#include "compiler/codegen/adjoint.h"
#include "compiler/codegen/codegen.h"
#include "compiler/codegen/layout.h"
#include "compiler/compiler.h"
#include "compiler/ir/from_proto.h"
#include "tools/gpu_check/cases.h"
#include "tools/gpu_check/json.h"
#include "tools/gpu_check/ptx_entry.h"
#include "warpd/native/array.h"
#include "warpd/native/launch.h"

namespace warpd::gpu_check {
namespace {

constexpr int kArch = 90;

absl::Status WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  if (!f) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status WriteGzipFile(const std::string& path, std::string_view bytes) {
  gzFile f = gzopen(path.c_str(), "wb9");
  if (f == nullptr) return absl::InternalError(absl::StrCat("cannot write ", path));
  const bool ok = bytes.empty() || gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) ==
                                       static_cast<int>(bytes.size());
  if (gzclose(f) != Z_OK || !ok) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status MakeDir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    return absl::InternalError(absl::StrCat("cannot create ", path, ": ", std::strerror(errno)));
  return absl::OkStatus();
}

const char* RuleName(Rule r) {
  switch (r) {
    case Rule::kExact: return "exact";
    case Rule::kClose: return "close";
    case Rule::kExpectedOrInitial: return "expected_or_initial";
    case Rule::kUnchanged: return "unchanged";
    case Rule::kReference: return "reference";
  }
  return "?";
}

// The layouts the runner must agree with (it checks its own constants).
Json Layouts() {
  Json ctx = Json::Object();
  ctx.Set("size", static_cast<int64_t>(sizeof(wp::launch_ctx)))
      .Set("bounds.shape", static_cast<int64_t>(offsetof(wp::launch_ctx, bounds.shape)))
      .Set("bounds.ndim", static_cast<int64_t>(offsetof(wp::launch_ctx, bounds.ndim)))
      .Set("bounds.size", static_cast<int64_t>(offsetof(wp::launch_ctx, bounds.size)))
      .Set("fault.flag", static_cast<int64_t>(offsetof(wp::launch_ctx, fault.flag)))
      .Set("fault.kind", static_cast<int64_t>(offsetof(wp::launch_ctx, fault.kind)))
      .Set("fault.line", static_cast<int64_t>(offsetof(wp::launch_ctx, fault.line)))
      .Set("fault.dim", static_cast<int64_t>(offsetof(wp::launch_ctx, fault.dim)))
      .Set("fault.index", static_cast<int64_t>(offsetof(wp::launch_ctx, fault.index)))
      .Set("fault.extent", static_cast<int64_t>(offsetof(wp::launch_ctx, fault.extent)))
      .Set("fault.array_ndim", static_cast<int64_t>(offsetof(wp::launch_ctx, fault.array_ndim)))
      .Set("fault.shape", static_cast<int64_t>(offsetof(wp::launch_ctx, fault.shape)))
      .Set("cancel", static_cast<int64_t>(offsetof(wp::launch_ctx, cancel)))
      .Set("output", static_cast<int64_t>(offsetof(wp::launch_ctx, output)));
  using A = wp::array_t<float>;
  Json arr = Json::Object();
  arr.Set("size", static_cast<int64_t>(sizeof(A)))
      .Set("data", static_cast<int64_t>(offsetof(A, data)))
      .Set("shape", static_cast<int64_t>(offsetof(A, shape)))
      .Set("ndim", static_cast<int64_t>(offsetof(A, ndim)))
      .Set("strides", static_cast<int64_t>(offsetof(A, strides)));
  Json out = Json::Object();
  out.Set("launch_ctx", std::move(ctx)).Set("array_t", std::move(arr));
  return out;
}

// What the runner needs to launch one kernel's entry.
struct KernelAbi {
  std::string entry;
  std::vector<compiler::ParamLayout> block_params;  // in block order
  Json args;                                        // passing, size, pieces, align, PTX parameter sizes
  Json params;
};

class Generator {
 public:
  Generator(std::string dir, const compiler::Nvrtc& nvrtc) : dir_(std::move(dir)), nvrtc_(nvrtc) {}

  // Writes the case's files; returns its manifest's file name.
  absl::StatusOr<std::string> Write(const CheckCase& c);

 private:
  absl::StatusOr<Json> LaunchJson(const CheckCase& c, const std::vector<compiler::ParamLayout>& params,
                                  const Launch& l);
  // Checks kernel `kernel_name`'s CUDA entry in the source and the PTX against
  // the launch ABI and describes it.
  absl::StatusOr<KernelAbi> Abi(const CheckCase& c, const ir::Module& module, const std::string& kernel_name,
                                const std::string& source, const std::string& ptx, bool check_passing);
  // A data file holding `bytes` (identical contents share one file).
  absl::StatusOr<std::string> DataFile(const std::string& name, const std::string& bytes);

  const std::string dir_;
  const compiler::Nvrtc& nvrtc_;
  std::map<std::string, std::string> data_files_;  // contents -> file name
};

absl::StatusOr<std::string> Generator::DataFile(const std::string& name, const std::string& bytes) {
  auto it = data_files_.find(bytes);
  if (it != data_files_.end()) return it->second;
  const std::string file = "data/" + name + ".bin";
  if (auto st = WriteFile(dir_ + "/" + file, bytes); !st.ok()) return st;
  data_files_.emplace(bytes, file);
  return file;
}

absl::StatusOr<Json> Generator::LaunchJson(const CheckCase& c, const std::vector<compiler::ParamLayout>& params,
                                           const Launch& l) {
  Json j = Json::Object();
  Json dim = Json::Array();
  for (int32_t d : l.dim) dim.Add(d);
  j.Set("name", l.name).Set("what", l.what).Set("dim", std::move(dim));
  j.Set("threads_per_block", l.threads_per_block).Set("max_blocks", l.max_blocks);
  j.Set("cancel_before", l.cancel_before).Set("cancel_after_s", l.cancel_after_s).Set("deadline_s", l.deadline_s);
  Json scalars = Json::Array(), arrays = Json::Array();
  for (const compiler::ParamLayout& p : params) {
    const std::string where = absl::StrCat(c.name, "/", l.name, ": parameter ", p.name);
    if (p.type->is_array()) {
      const ArrayArg* a = nullptr;
      for (const ArrayArg& x : l.arrays)
        if (x.param == p.name) a = &x;
      if (a == nullptr) return absl::InternalError(absl::StrCat(where, " has no array"));
      if (static_cast<int>(a->shape.size()) != p.type->ndim())
        return absl::InternalError(absl::StrCat(where, ": shape has ", a->shape.size(), " dims, type ", p.type->ndim()));
      const int64_t elem = static_cast<int64_t>(p.type->element()->size());
      int64_t count = 1;
      for (int64_t s : a->shape) count *= s;
      if (static_cast<int64_t>(a->init.size()) != count * elem ||
          (a->rule != Rule::kUnchanged && static_cast<int64_t>(a->expect.size()) != count * elem))
        return absl::InternalError(absl::StrCat(where, ": data size does not match the shape"));
      // Row-major byte strides, as MakeArrayLayout (runtime/objects/array.cc).
      std::vector<int64_t> strides(a->shape.size());
      int64_t stride = elem;
      for (int d = static_cast<int>(a->shape.size()) - 1; d >= 0; --d) {
        strides[d] = stride;
        stride *= a->shape[d];
      }
      Json shape = Json::Array(), st = Json::Array();
      for (size_t d = 0; d < a->shape.size(); ++d) {
        shape.Add(a->shape[d]);
        st.Add(strides[d]);
      }
      const std::string base = absl::StrCat(c.name, ".", l.name, ".", absl::StrReplaceAll(p.name, {{":", "_"}}));
      auto init = DataFile(base + ".init", a->init);
      if (!init.ok()) return init.status();
      Json arr = Json::Object();
      arr.Set("param", p.name).Set("shape", std::move(shape)).Set("strides", std::move(st));
      arr.Set("guard_elems", a->guard_elems).Set("init", *init).Set("rule", RuleName(a->rule));
      arr.Set("flags", a->flags);
      if (a->rule != Rule::kUnchanged) {
        auto expect = DataFile(base + ".expect", a->expect);
        if (!expect.ok()) return expect.status();
        arr.Set("expect", *expect);
      } else {
        arr.Set("expect", Json());
      }
      arr.Set("rtol", a->rtol).Set("atol", a->atol);
      arrays.Add(std::move(arr));
    } else {
      const ScalarArg* s = nullptr;
      for (const ScalarArg& x : l.scalars)
        if (x.param == p.name) s = &x;
      if (s == nullptr) return absl::InternalError(absl::StrCat(where, " has no value"));
      if (s->bytes.size() != p.size)
        return absl::InternalError(absl::StrCat(where, ": ", s->bytes.size(), " bytes for a ", p.size, "-byte type"));
      Json values = Json::Array();
      for (double v : s->shown) values.Add(v);
      Json sj = Json::Object();
      sj.Set("param", p.name).Set("bytes_hex", absl::BytesToHexString(s->bytes)).Set("values", std::move(values));
      Json refs = Json::Array();
      for (const ArrayRef& r : s->refs) {
        auto init = DataFile(absl::StrCat(c.name, ".", l.name, ".", p.name, ".", r.at), r.init);
        if (!init.ok()) return init.status();
        Json rj = Json::Object(), shape = Json::Array(), strides = Json::Array();
        shape.Add(r.shape.at(0));
        strides.Add(static_cast<int64_t>(r.elem_bytes));
        rj.Set("at", r.at).Set("shape", std::move(shape)).Set("strides", std::move(strides));
        rj.Set("elem_bytes", r.elem_bytes).Set("init", *init);
        refs.Add(std::move(rj));
      }
      sj.Set("refs", std::move(refs));
      scalars.Add(std::move(sj));
    }
  }
  if (l.scalars.size() + l.arrays.size() != params.size())
    return absl::InternalError(absl::StrCat(c.name, "/", l.name, ": a value for a parameter the kernel lacks"));
  const FaultExpect& f = l.fault;
  Json fs = Json::Array();
  for (int64_t s : f.shape) fs.Add(s);
  Json fault = Json::Object();
  fault.Set("flag", f.flag).Set("kind", f.kind).Set("line", f.line).Set("dim", f.dim).Set("index", f.index);
  fault.Set("extent", f.extent).Set("array_ndim", f.array_ndim).Set("shape", std::move(fs));
  j.Set("scalars", std::move(scalars)).Set("arrays", std::move(arrays)).Set("fault", std::move(fault));
  return j;
}

// Each element's scalars as [offset, scalar name, count] runs (struct
// members flattened), so the runner can compare any element type.
void AddFields(types::TypeRef t, uint64_t base, Json& out) {
  if (t->is_struct()) {
    for (const types::Member& m : t->members())
      if (!m.type->is_array()) AddFields(m.type, base + m.offset, out);
    return;
  }
  const size_t scalar = types::ScalarSize(t->scalar());
  Json f = Json::Array();
  f.Add(static_cast<int64_t>(base)).Add(std::string(types::ScalarName(t->scalar())));
  f.Add(static_cast<int64_t>(t->size() / scalar));
  out.Add(std::move(f));
}

absl::StatusOr<KernelAbi> Generator::Abi(const CheckCase& c, const ir::Module& module, const std::string& kernel_name,
                                         const std::string& source, const std::string& ptx, bool check_passing) {
  const ir::Function* kernel = nullptr;
  for (const ir::Function& f : module.functions)
    if (f.kind == ir::FunctionKind::kKernel && f.name == kernel_name) kernel = &f;
  if (kernel == nullptr) return absl::InternalError(absl::StrCat("no kernel ", kernel_name));
  const compiler::KernelLayout layout = compiler::ComputeLayout(module, *kernel);

  // The launch ABI's rule (codegen.cc, adjoint.cc), and what the source and
  // PTX say. An adjoint entry takes both blocks: by value as two parameters,
  // or the address of the two side by side.
  KernelAbi abi;
  const uint32_t blocks = c.adjoint ? 2 : 1;
  // A kernel without parameters has a 4-byte block struct (codegen.cc: one
  // unused int32, as C++ has no empty struct of size 0).
  const uint32_t piece = layout.params.empty() ? 4 : layout.args_size;
  const uint64_t block_bytes = uint64_t{blocks} * piece;
  abi.entry = c.adjoint ? codegen::AdjointCudaEntrySymbol(kernel_name) : codegen::CudaEntrySymbol(kernel_name);
  const bool by_pointer = block_bytes + sizeof(void*) > codegen::kMaxCudaParamBytes;
  if (check_passing && by_pointer != c.by_pointer)
    return absl::InternalError(absl::StrCat(block_bytes, "-byte block: expected by ",
                                            c.by_pointer ? "pointer" : "value"));
  const std::string args = "wpa_" + kernel_name;
  std::string signature;
  if (!c.adjoint) {
    signature = absl::StrCat("__global__ void ", abi.entry, "(wp::launch_ctx* ctx, ",
                             by_pointer ? "const " + args + "* __restrict__ args" : args + " args", ")");
  } else {
    signature = absl::StrCat("__global__ void ", abi.entry, "(wp::launch_ctx* ctx, ",
                             by_pointer ? "const char* __restrict__ block" : args + " args, " + args + " adj", ")");
  }
  if (source.find(signature) == std::string::npos)
    return absl::InternalError(absl::StrCat("generated source lacks '", signature, "'"));
  auto ptx_params = PtxEntryParamBytes(ptx, abi.entry);
  if (!ptx_params.ok()) return ptx_params.status();
  std::vector<uint64_t> want_params = {8};
  for (uint32_t b = 0; b < (by_pointer ? 1 : blocks); ++b) want_params.push_back(by_pointer ? 8 : piece);
  if (*ptx_params != want_params)
    return absl::InternalError(absl::StrCat("PTX entry ", abi.entry, " has parameters of unexpected sizes (want ",
                                            absl::StrJoin(want_params, ", "), ")"));

  // The parameters in block order: an adjoint's second block holds "adj:p".
  abi.block_params = layout.params;
  if (c.adjoint) {
    for (const compiler::ParamLayout& p : layout.params) {
      compiler::ParamLayout adj = p;
      adj.name = "adj:" + p.name;
      adj.offset += layout.args_size;
      abi.block_params.push_back(std::move(adj));
    }
  }
  abi.params = Json::Array();
  for (const compiler::ParamLayout& p : abi.block_params) {
    Json pj = Json::Object();
    pj.Set("name", p.name).Set("type", p.type->ToString()).Set("offset", p.offset).Set("size", p.size);
    if (p.type->is_array()) {
      types::TypeRef el = p.type->element();
      const size_t scalar = types::ScalarSize(el->scalar());
      pj.Set("kind", "array").Set("ndim", p.type->ndim()).Set("elem_bytes", static_cast<int64_t>(el->size()));
      pj.Set("scalar", std::string(types::ScalarName(el->scalar())));
      pj.Set("components", static_cast<int64_t>(el->size() / scalar));
      Json fields = Json::Array();
      AddFields(el, 0, fields);
      pj.Set("fields", std::move(fields));
    } else {
      pj.Set("kind", "value");
    }
    abi.params.Add(std::move(pj));
  }
  Json ptx_json = Json::Array();
  for (uint64_t b : *ptx_params) ptx_json.Add(static_cast<int64_t>(b));
  // By value, the block travels as `pieces` parameters of equal size.
  abi.args = Json::Object();
  abi.args.Set("passing", by_pointer ? "pointer" : "value").Set("size", static_cast<int64_t>(block_bytes));
  abi.args.Set("pieces", static_cast<int64_t>(by_pointer ? 1 : blocks));
  abi.args.Set("align", layout.args_align).Set("ptx_param_bytes", std::move(ptx_json));
  return abi;
}

absl::StatusOr<std::string> Generator::Write(const CheckCase& c) {
  v1::Module proto = c.proto;
  if (c.adjoint) proto.set_backward(true);
  auto module = ir::ModuleFromProto(proto);
  if (!module.ok()) return module.status();
  auto generated = compiler::Compiler::Generate(**module);
  if (!generated.ok()) return generated.status();
  auto ptx = nvrtc_.CompileToPtx(generated->source, c.name + ".cu", kArch);
  if (!ptx.ok()) return ptx.status();
  if (auto st = compiler::VerifyPtx(*ptx, kArch); !st.ok()) return st;
  // The case's kernel; launches naming their own kernel carry their own ABI.
  auto abi = Abi(c, **module, c.kernel, generated->source, *ptx, /*check_passing=*/true);
  if (!abi.ok()) return abi.status();

  // Large cases (the overload modules) are written gzip-compressed.
  const std::string gz = c.compressed ? ".gz" : "";
  const auto write = c.compressed ? WriteGzipFile : WriteFile;
  if (auto st = write(dir_ + "/src/" + c.name + ".cu" + gz, generated->source); !st.ok()) return st;
  if (auto st = write(dir_ + "/" + c.name + ".ptx" + gz, *ptx); !st.ok()) return st;

  Json m = Json::Object();
  m.Set("name", c.name).Set("what", c.what).Set("kernel", c.kernel).Set("entry", abi->entry);
  m.Set("pass", c.adjoint ? "adjoint" : "forward");
  m.Set("ptx", c.name + ".ptx" + gz).Set("source", "src/" + c.name + ".cu" + gz).Set("arch", kArch);
  m.Set("args", abi->args).Set("params", abi->params);
  Json launches = Json::Array();
  for (const Launch& l : c.launches) {
    const KernelAbi* own = &*abi;
    absl::StatusOr<KernelAbi> other;
    if (!l.kernel.empty() && l.kernel != c.kernel) {
      other = Abi(c, **module, l.kernel, generated->source, *ptx, /*check_passing=*/false);
      if (!other.ok()) return other.status();
      own = &*other;
    }
    auto lj = LaunchJson(c, own->block_params, l);
    if (!lj.ok()) return lj.status();
    if (own != &*abi) lj->Set("entry", own->entry).Set("args", own->args).Set("params", own->params);
    launches.Add(*std::move(lj));
  }
  m.Set("launches", std::move(launches));
  const std::string file = c.name + ".json" + gz;
  if (auto st = write(dir_ + "/" + file, m.Dump()); !st.ok()) return st;
  return file;
}

int Main(int argc, char** argv) {
  std::string dir, label;
  bool with_overloads = false;
  int overloads_first = 0, overloads_count = -1;
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--label" && i + 1 < argc) {
      label = argv[++i];
    } else if (a == "--overloads" && i + 1 < argc) {
      // FIRST:COUNT (modules of the overload catalog; COUNT -1: to the end)
      const std::string v = argv[++i];
      const size_t colon = v.find(':');
      if (colon == std::string::npos) {
        dir.clear();
        break;
      }
      overloads_first = std::atoi(v.substr(0, colon).c_str());
      overloads_count = std::atoi(v.substr(colon + 1).c_str());
      with_overloads = true;
    } else if (dir.empty() && !a.empty() && a[0] != '-') {
      dir = a;
    } else {
      dir.clear();
      break;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: gpu_check_gen OUT_DIR [--label TEXT] [--overloads FIRST:COUNT]\n");
    return 2;
  }
  auto nvrtc = compiler::Nvrtc::Load();
  if (!nvrtc.ok()) {
    std::fprintf(stderr, "gpu_check_gen: %s\n", std::string(nvrtc.status().message()).c_str());
    return 1;
  }
  for (const std::string& d : {dir, dir + "/src", dir + "/data"}) {
    if (auto st = MakeDir(d); !st.ok()) {
      std::fprintf(stderr, "gpu_check_gen: %s\n", std::string(st.message()).c_str());
      return 1;
    }
  }
  Generator gen(dir, **nvrtc);
  Json cases = Json::Array();
  std::vector<CheckCase> all = AllCases();
  if (with_overloads) {
    auto more = OverloadCases(overloads_first, overloads_count);
    if (!more.ok()) {
      std::fprintf(stderr, "gpu_check_gen: overloads: %s\n", more.status().ToString().c_str());
      return 1;
    }
    // Before the last case (a cancel while running, which may break a device).
    all.insert(all.end() - 1, std::make_move_iterator(more->begin()), std::make_move_iterator(more->end()));
  }
  for (const CheckCase& c : all) {
    auto file = gen.Write(c);
    if (!file.ok()) {
      std::fprintf(stderr, "gpu_check_gen: case %s: %s\n", c.name.c_str(), file.status().ToString().c_str());
      return 1;
    }
    cases.Add(*file);
    std::printf("%-16s %s\n", c.name.c_str(), c.what.c_str());
  }
  Json index = Json::Object();
  index.Set("format", 1).Set("label", label).Set("arch", kArch);
  index.Set("nvrtc", absl::StrCat((*nvrtc)->version(), " (", (*nvrtc)->library(), ")"));
  index.Set("layouts", Layouts()).Set("cases", std::move(cases));
  if (auto st = WriteFile(dir + "/checks.json", index.Dump()); !st.ok()) {
    std::fprintf(stderr, "gpu_check_gen: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  std::printf("wrote %s/checks.json (NVRTC %s, PTX for compute_%d, each accepted by ptxas -arch=sm_%d)\n",
              dir.c_str(), (*nvrtc)->version().c_str(), kArch, kArch);
  return 0;
}

}  // namespace
}  // namespace warpd::gpu_check

int main(int argc, char** argv) { return warpd::gpu_check::Main(argc, argv); }
