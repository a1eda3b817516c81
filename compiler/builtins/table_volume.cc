// The builtin table: volume queries (Warp's wp.Volume, native volume.h).
//
// Volumes are named by uint64 ids resolved through the launch's object
// table on every call, so the spellings pass the launch context and the
// call's line (`$L`). The adjoints need the table too: their spelling is
// `wp::volume_adjoint(ctx).f`, called with the forward arguments, their
// adjoints and the result's adjoint (docs/architecture.md, "Volumes").
//
// The generic forms that take `dtype=` (volume_sample, volume_sample_grad,
// volume_lookup, and volume_sample_grad_index for its gradient type check)
// are typing hooks that resolve the call to a concrete overload made here
// (HookResult::overload), so their gradient argument is an output place and
// their adjoints are those of the concrete forms.
#include <deque>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "compiler/builtins/table_builder.h"

namespace warpd::builtins::internal {

namespace {

using types::ScalarKind;
using types::TypeRef;

// The value types a volume holds: kernels' dtypes.
bool VolumeValueType(TypeRef t) {
  if (t == nullptr) return false;
  if (t->is_scalar()) {
    const ScalarKind s = t->scalar();
    return s == ScalarKind::kFloat32 || s == ScalarKind::kFloat64 || s == ScalarKind::kInt32 ||
           s == ScalarKind::kInt64 || s == ScalarKind::kUInt32;
  }
  if (t->is_vector()) {
    return (t->length() == 3 || t->length() == 4) &&
           (t->scalar() == ScalarKind::kFloat32 || t->scalar() == ScalarKind::kFloat64);
  }
  return false;
}

// The type of the gradient of a value of type t (Warp's val_traits):
// vec3 of a scalar, a (length x 3) matrix of a vector.
TypeRef GradType(TypeRef t) {
  if (t->is_scalar()) return types::Vector(3, t->scalar());
  return types::Matrix(t->length(), 3, t->scalar());
}

struct Args {
  std::vector<ir::Expr*> pos;
  std::vector<std::pair<std::string, ir::Expr*>> kw;
  explicit Args(ir::Expr& call) {
    const size_t npos = call.operands.size() - call.keywords.size();
    for (size_t i = 0; i < call.operands.size(); ++i) {
      if (i < npos) pos.push_back(call.operands[i].get());
      else kw.push_back({call.keywords[i - npos], call.operands[i].get()});
    }
  }
};

absl::Status Err(std::string msg) { return absl::InvalidArgumentError(std::move(msg)); }

// Concrete overloads the hooks resolve to, made on first use and never
// freed (pointers to them live in typed IR).
const Overload* Concrete(std::string_view name, std::vector<std::pair<std::string, bool>> params, bool diff,
                         std::string_view adjoint) {
  static std::mutex mu;
  static std::deque<Overload>* made = new std::deque<Overload>();
  static std::deque<std::string>* names = new std::deque<std::string>();
  std::lock_guard<std::mutex> lock(mu);
  for (const Overload& o : *made) {
    if (o.name != name || o.sig.params.size() != params.size()) continue;
    bool same = true;
    for (size_t i = 0; i < params.size(); ++i) same &= o.sig.params[i].out == params[i].second;
    if (same) return &o;
  }
  names->push_back(std::string(name));
  Overload o;
  o.name = names->back();
  o.group = "Volumes";
  o.header = "warpd/native/volume.h";
  o.differentiable = diff;
  o.adjoint = adjoint;
  for (auto& [n, out] : params) {
    Param p;
    p.name = n;
    p.out = out;
    o.sig.params.push_back(std::move(p));
  }
  made->push_back(std::move(o));
  return &made->back();
}

// The dtype= keyword's type, or an error naming the call.
absl::StatusOr<TypeRef> DType(const Args& a, const std::string& fn, size_t positional) {
  if (a.pos.size() != positional)
    return Err(absl::StrCat(fn, "() takes ", positional, " positional arguments and dtype= (got ", a.pos.size(), ")"));
  ir::Expr* d = nullptr;
  for (const auto& [k, v] : a.kw) {
    if (k != "dtype") return Err(absl::StrCat(fn, "() got an unexpected keyword argument '", k, "'"));
    d = v;
  }
  if (d == nullptr || d->kind != ir::ExprKind::TypeValue || d->type_value == nullptr)
    return Err(absl::StrCat(fn, "() needs dtype= a volume value type such as wp.float32 or wp.vec3"));
  if (!VolumeValueType(d->type_value))
    return Err(absl::StrCat(fn, "(): volumes hold float32, float64, int32, int64, uint32, vec3f, vec3d, vec4f or vec4d, not ",
                            d->type_value->ToString()));
  return d->type_value;
}

absl::Status CheckArg(const ir::Expr* e, TypeRef want, const std::string& fn, const std::string& name) {
  if (e->type == nullptr || !types::SameType(e->type, want))
    return Err(absl::StrCat(fn, "(): argument '", name, "' must be ", want->ToString(), ", got ",
                            e->type ? e->type->ToString() : "nothing"));
  return absl::OkStatus();
}

TypeRef U64() { return types::Scalar(ScalarKind::kUInt64); }
TypeRef I32() { return types::Scalar(ScalarKind::kInt32); }
TypeRef V3f() { return types::Vector(3, ScalarKind::kFloat32); }

// Warp's short names of vector and matrix types in this error ("mat43f").
std::string ShortName(TypeRef t) {
  if (t == nullptr) return "nothing";
  const bool shaped = t->is_vector() || t->is_matrix();
  if (shaped && (t->scalar() == ScalarKind::kFloat32 || t->scalar() == ScalarKind::kFloat64)) {
    const char* s = t->scalar() == ScalarKind::kFloat32 ? "f" : "d";
    if (t->is_vector()) return absl::StrCat("vec", t->length(), s);
    return absl::StrCat("mat", t->rows(), t->cols(), s);
  }
  return t->ToString();
}

absl::Status CheckGrad(const ir::Expr* grad, TypeRef t) {
  const TypeRef want = GradType(t);
  if (grad->type == nullptr || !types::SameType(grad->type, want))
    return Err(absl::StrCat("Incompatible gradient type, expected ", ShortName(want), ", got ", ShortName(grad->type)));
  return absl::OkStatus();
}

absl::StatusOr<HookResult> HookSample(const Overload&, ir::Expr& call, types::TypeTable&) {
  Args a(call);
  auto t = DType(a, "volume_sample", 3);
  if (!t.ok()) return t.status();
  if (auto s = CheckArg(a.pos[0], U64(), "volume_sample", "id"); !s.ok()) return s;
  if (auto s = CheckArg(a.pos[1], V3f(), "volume_sample", "uvw"); !s.ok()) return s;
  if (auto s = CheckArg(a.pos[2], I32(), "volume_sample", "sampling_mode"); !s.ok()) return s;
  HookResult r;
  r.result = *t;
  r.cpp = "wp::volume_sample<$R>(ctx, $L, $0, $1, $2)";
  r.overload = Concrete("volume_sample", {{"id", false}, {"uvw", false}, {"sampling_mode", false}}, true,
                        "wp::volume_adjoint(ctx).sample");
  return r;
}

absl::StatusOr<HookResult> HookSampleGrad(const Overload&, ir::Expr& call, types::TypeTable&) {
  Args a(call);
  auto t = DType(a, "volume_sample_grad", 4);
  if (!t.ok()) return t.status();
  if (auto s = CheckArg(a.pos[0], U64(), "volume_sample_grad", "id"); !s.ok()) return s;
  if (auto s = CheckArg(a.pos[1], V3f(), "volume_sample_grad", "uvw"); !s.ok()) return s;
  if (auto s = CheckArg(a.pos[2], I32(), "volume_sample_grad", "sampling_mode"); !s.ok()) return s;
  if (auto s = CheckGrad(a.pos[3], *t); !s.ok()) return s;
  HookResult r;
  r.result = *t;
  r.cpp = "wp::volume_sample_grad<$R>(ctx, $L, $0, $1, $2, $3)";
  r.overload = Concrete("volume_sample_grad",
                        {{"id", false}, {"uvw", false}, {"sampling_mode", false}, {"grad", true}}, true,
                        "wp::volume_adjoint(ctx).sample_grad");
  return r;
}

absl::StatusOr<HookResult> HookSampleGradIndex(const Overload&, ir::Expr& call, types::TypeTable&) {
  Args a(call);
  const char* fn = "volume_sample_grad_index";
  if (a.pos.size() != 6 || !a.kw.empty())
    return Err("volume_sample_grad_index() takes id, uvw, sampling_mode, voxel_data, background and grad");
  if (auto s = CheckArg(a.pos[0], U64(), fn, "id"); !s.ok()) return s;
  if (auto s = CheckArg(a.pos[1], V3f(), fn, "uvw"); !s.ok()) return s;
  if (auto s = CheckArg(a.pos[2], I32(), fn, "sampling_mode"); !s.ok()) return s;
  const TypeRef data = a.pos[3]->type;
  if (data == nullptr || !data->is_array() || data->ndim() != 1 || data->is_indexed_array() ||
      !VolumeValueType(data->element()))
    return Err("volume_sample_grad_index(): voxel_data must be a 1-D array of a volume value type");
  const TypeRef t = data->element();
  if (auto s = CheckArg(a.pos[4], t, fn, "background"); !s.ok()) return s;
  if (auto s = CheckGrad(a.pos[5], t); !s.ok()) return s;
  HookResult r;
  r.result = t;
  r.cpp = "wp::volume_sample_grad_index(ctx, $L, $0, $1, $2, $3, $4, $5)";
  r.overload = Concrete(fn,
                        {{"id", false},
                         {"uvw", false},
                         {"sampling_mode", false},
                         {"voxel_data", false},
                         {"background", false},
                         {"grad", true}},
                        true, "wp::volume_adjoint(ctx).sample_grad_index");
  return r;
}

absl::StatusOr<HookResult> HookLookup(const Overload&, ir::Expr& call, types::TypeTable&) {
  Args a(call);
  auto t = DType(a, "volume_lookup", 4);
  if (!t.ok()) return t.status();
  if (auto s = CheckArg(a.pos[0], U64(), "volume_lookup", "id"); !s.ok()) return s;
  for (int c = 1; c < 4; ++c)
    if (auto s = CheckArg(a.pos[c], I32(), "volume_lookup", c == 1 ? "i" : c == 2 ? "j" : "k"); !s.ok()) return s;
  HookResult r;
  r.result = *t;
  r.cpp = "wp::volume_lookup<$R>(ctx, $L, $0, $1, $2, $3)";
  return r;
}

}  // namespace

void AddVolumes(Builder& b) {
  b.Group("Volumes", "warpd/native/volume.h");
  const std::string head = "id: uint64, uvw: vec(3, float32), sampling_mode: int32";
  const std::string ijk = "id: uint64, i: int32, j: int32, k: int32";
  // Sampling (index space; CLOSEST or LINEAR): differentiable in the
  // position (and, for index grids, in the voxel data and background).
  b.Add("volume_sample_f", head, "float32")
      .Diff()
      .Cpp("wp::volume_sample<wp::float32>(ctx, $L, $0, $1, $2)")
      .Adj("wp::volume_adjoint(ctx).sample");
  b.Add("volume_sample_v", head, "vec(3, float32)")
      .Diff()
      .Cpp("wp::volume_sample<wp::vec3f>(ctx, $L, $0, $1, $2)")
      .Adj("wp::volume_adjoint(ctx).sample");
  b.Add("volume_sample_i", "id: uint64, uvw: vec(3, float32)", "int32")
      .NoDiff()
      .Cpp("wp::volume_sample<wp::int32>(ctx, $L, $0, $1, wp::VOLUME_CLOSEST)");
  b.Hook("volume_sample", HookSample, head + ", dtype: Any", "dtype").Diff();
  b.Add("volume_sample_grad_f", head + ", grad: out vec(3, float32)", "float32")
      .Diff()
      .Cpp("wp::volume_sample_grad<wp::float32>(ctx, $L, $0, $1, $2, $3)")
      .Adj("wp::volume_adjoint(ctx).sample_grad");
  b.Hook("volume_sample_grad", HookSampleGrad, head + ", grad: Any, dtype: Any", "dtype").Diff();
  b.Add("volume_sample_index", head + ", voxel_data: array(V, 1), background: V", "V")
      .Diff()
      .Cpp("wp::volume_sample_index(ctx, $L, $0, $1, $2, $3, $4)")
      .Adj("wp::volume_adjoint(ctx).sample_index");
  b.Hook("volume_sample_grad_index", HookSampleGradIndex,
         head + ", voxel_data: array(Any, 1), background: Any, grad: Any", "voxel_data.dtype")
      .Diff();
  // Lookups and stores of single voxels (no gradients, as in Warp).
  b.Add("volume_lookup_f", ijk, "float32").NoDiff().Cpp("wp::volume_lookup<wp::float32>(ctx, $L, $0, $1, $2, $3)");
  b.Add("volume_lookup_v", ijk, "vec(3, float32)").NoDiff().Cpp("wp::volume_lookup<wp::vec3f>(ctx, $L, $0, $1, $2, $3)");
  b.Add("volume_lookup_i", ijk, "int32").NoDiff().Cpp("wp::volume_lookup<wp::int32>(ctx, $L, $0, $1, $2, $3)");
  b.Hook("volume_lookup", HookLookup, ijk + ", dtype: Any", "dtype").NoDiff();
  b.Add("volume_lookup_index", ijk, "int32").NoDiff().Cpp("wp::volume_lookup_index(ctx, $L, $0, $1, $2, $3)");
  b.Add("volume_voxel_count", "id: uint64", "int32").NoDiff().Cpp("wp::volume_voxel_count(ctx, $L, $0)");
  b.Add("volume_store_f", ijk + ", value: float32", "").NoDiff().Cpp("wp::volume_store(ctx, $L, $0, $1, $2, $3, $4)");
  b.Add("volume_store_v", ijk + ", value: vec(3, float32)", "")
      .NoDiff()
      .Cpp("wp::volume_store(ctx, $L, $0, $1, $2, $3, $4)");
  b.Add("volume_store_i", ijk + ", value: int32", "").NoDiff().Cpp("wp::volume_store(ctx, $L, $0, $1, $2, $3, $4)");
  for (const char* t : {"float32", "float64", "int32", "int64", "uint32"}) {
    b.Add("volume_store", ijk + ", value: " + t, "").NoDiff().Cpp("wp::volume_store(ctx, $L, $0, $1, $2, $3, $4)");
  }
  for (const char* t : {"vec(3, float32)", "vec(3, float64)", "vec(4, float32)", "vec(4, float64)"}) {
    b.Add("volume_store", ijk + ", value: " + std::string(t), "")
        .NoDiff()
        .Cpp("wp::volume_store(ctx, $L, $0, $1, $2, $3, $4)");
  }
  // Index <-> world space (the grid's affine map), positions and directions.
  for (const char* s : {"float32", "float64"}) {
    const std::string v = std::string("vec(3, ") + s + ")";
    b.Add("volume_index_to_world", "id: uint64, uvw: " + v, v)
        .Diff()
        .Cpp("wp::volume_index_to_world(ctx, $L, $0, $1)")
        .Adj("wp::volume_adjoint(ctx).index_to_world");
    b.Add("volume_world_to_index", "id: uint64, xyz: " + v, v)
        .Diff()
        .Cpp("wp::volume_world_to_index(ctx, $L, $0, $1)")
        .Adj("wp::volume_adjoint(ctx).world_to_index");
    b.Add("volume_index_to_world_dir", "id: uint64, uvw: " + v, v)
        .Diff()
        .Cpp("wp::volume_index_to_world_dir(ctx, $L, $0, $1)")
        .Adj("wp::volume_adjoint(ctx).index_to_world");
    b.Add("volume_world_to_index_dir", "id: uint64, xyz: " + v, v)
        .Diff()
        .Cpp("wp::volume_world_to_index_dir(ctx, $L, $0, $1)")
        .Adj("wp::volume_adjoint(ctx).world_to_index");
  }
}

}  // namespace warpd::builtins::internal
