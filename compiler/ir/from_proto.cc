#include "compiler/ir/from_proto.h"

#include <unordered_map>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace warpd::ir {
namespace {

// Builds the in-memory IR, checking structure and limits as it goes. Depth is
// checked before recursing, so hostile nesting cannot exhaust the stack.
class Converter {
 public:
  explicit Converter(const Limits& limits) : limits_(limits) {}

  absl::StatusOr<std::unique_ptr<Module>> Convert(const v1::Module& proto);

 private:
  absl::Status Error(const v1::SourceSpan& span, absl::string_view message) {
    if (!span.file().empty() && span.file().size() <= static_cast<size_t>(limits_.max_text))
      return absl::InvalidArgumentError(
          absl::StrCat(span.file(), ":", span.line(), ":", span.col(), ": error: ", message));
    return absl::InvalidArgumentError(absl::StrCat("malformed module: ", message));
  }
  absl::Status CountNode(const v1::SourceSpan& span) {
    if (++nodes_ > limits_.max_nodes)
      return Error(span, absl::StrCat("module too large (more than ", limits_.max_nodes, " nodes)"));
    return absl::OkStatus();
  }
  absl::Status CheckIdentifier(const v1::SourceSpan& span, const std::string& id, absl::string_view what);
  Span ToSpan(const v1::SourceSpan& s);
  absl::StatusOr<ExprPtr> ConvertExpr(const v1::Expr& e, int depth);
  absl::StatusOr<ExprPtr> ConvertOptional(const v1::Expr& e, const v1::SourceSpan& parent, int depth,
                                          absl::string_view what);
  absl::StatusOr<StmtPtr> ConvertStmt(const v1::Stmt& s, int depth);
  absl::Status ConvertBlock(const google::protobuf::RepeatedPtrField<v1::Stmt>& in, Block* out, int depth);

  const Limits& limits_;
  Module* module_ = nullptr;
  std::unordered_map<std::string, uint32_t> file_index_;
  int nodes_ = 0;
  int statements_ = 0;    // in the function being converted
  std::string function_;  // its name
};

bool IsIdentifier(const std::string& s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

// Dotted names are allowed for builtin callees ("wp.foo" from an unknown global).
bool IsDottedName(const std::string& s) {
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    if (!IsIdentifier(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start)))
      return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

absl::Status Converter::CheckIdentifier(const v1::SourceSpan& span, const std::string& id,
                                        absl::string_view what) {
  if (static_cast<int>(id.size()) > limits_.max_identifier)
    return Error(span, absl::StrCat(what, " is longer than ", limits_.max_identifier, " characters"));
  if (!IsIdentifier(id)) return Error(span, absl::StrCat("invalid ", what, " '", id, "'"));
  return absl::OkStatus();
}

Span Converter::ToSpan(const v1::SourceSpan& s) {
  Span out;
  auto [it, inserted] = file_index_.emplace(s.file(), static_cast<uint32_t>(module_->files.size()));
  if (inserted) module_->files.push_back(s.file());
  out.file = it->second;
  out.line = s.line();
  out.col = s.col();
  return out;
}

std::optional<ScalarKind> ScalarFromProto(v1::ScalarType t) {
  switch (t) {
    case v1::SCALAR_BOOL: return ScalarKind::kBool;
    case v1::SCALAR_INT8: return ScalarKind::kInt8;
    case v1::SCALAR_UINT8: return ScalarKind::kUInt8;
    case v1::SCALAR_INT16: return ScalarKind::kInt16;
    case v1::SCALAR_UINT16: return ScalarKind::kUInt16;
    case v1::SCALAR_INT32: return ScalarKind::kInt32;
    case v1::SCALAR_UINT32: return ScalarKind::kUInt32;
    case v1::SCALAR_INT64: return ScalarKind::kInt64;
    case v1::SCALAR_UINT64: return ScalarKind::kUInt64;
    case v1::SCALAR_FLOAT16: return ScalarKind::kFloat16;
    case v1::SCALAR_FLOAT32: return ScalarKind::kFloat32;
    case v1::SCALAR_FLOAT64: return ScalarKind::kFloat64;
    case v1::SCALAR_BFLOAT16: return ScalarKind::kBFloat16;
    default: return std::nullopt;
  }
}

v1::ScalarType ScalarToProto(ScalarKind s) {
  static const v1::ScalarType kMap[] = {
      v1::SCALAR_BOOL,   v1::SCALAR_INT8,   v1::SCALAR_UINT8,   v1::SCALAR_INT16,
      v1::SCALAR_UINT16, v1::SCALAR_INT32,  v1::SCALAR_UINT32,  v1::SCALAR_INT64,
      v1::SCALAR_UINT64, v1::SCALAR_FLOAT16, v1::SCALAR_FLOAT32, v1::SCALAR_FLOAT64,
      v1::SCALAR_BFLOAT16};
  return kMap[static_cast<int>(s)];
}

template <typename E>
bool InRange(int v, E lo, E hi) {
  return v >= static_cast<int>(lo) && v <= static_cast<int>(hi);
}

absl::StatusOr<ExprPtr> Converter::ConvertOptional(const v1::Expr& e, const v1::SourceSpan& parent,
                                                   int depth, absl::string_view what) {
  if (e.kind_case() == v1::Expr::KIND_NOT_SET) return Error(parent, absl::StrCat("missing ", what));
  return ConvertExpr(e, depth);
}

absl::StatusOr<ExprPtr> Converter::ConvertExpr(const v1::Expr& e, int depth) {
  if (depth > limits_.max_depth)
    return Error(e.span(), absl::StrCat("expression nested deeper than ", limits_.max_depth, " levels"));
  if (auto st = CountNode(e.span()); !st.ok()) return st;
  auto out = std::make_unique<Expr>();
  out->span = ToSpan(e.span());
  auto add = [&](const v1::Expr& child, absl::string_view what) -> absl::Status {
    auto c = ConvertOptional(child, e.span(), depth + 1, what);
    if (!c.ok()) return c.status();
    out->operands.push_back(*std::move(c));
    return absl::OkStatus();
  };
  switch (e.kind_case()) {
    case v1::Expr::kName:
      out->kind = ExprKind::Name;
      WARPD_RETURN_IF_ERROR(CheckIdentifier(e.span(), e.name().id(), "name"));
      out->name = e.name().id();
      break;
    case v1::Expr::kConstant: {
      out->kind = ExprKind::Constant;
      const auto& c = e.constant();
      switch (c.value_case()) {
        case v1::Constant::kBoolValue: out->value = c.bool_value(); break;
        case v1::Constant::kIntValue: out->value = static_cast<int64_t>(c.int_value()); break;
        case v1::Constant::kFloatValue: out->value = c.float_value(); break;
        case v1::Constant::kStringValue:
          if (c.string_value().size() > 1024) return Error(e.span(), "string constant longer than 1024 bytes");
          out->value = c.string_value();
          break;
        default: return Error(e.span(), "constant without a value");
      }
      if (c.dtype() != v1::SCALAR_TYPE_UNSPECIFIED) {
        auto s = ScalarFromProto(c.dtype());
        if (!s) return Error(e.span(), "constant with an unknown dtype");
        out->const_dtype = *s;
      }
      break;
    }
    case v1::Expr::kBinary:
      out->kind = ExprKind::Binary;
      if (!InRange(e.binary().op(), v1::BINOP_ADD, v1::BINOP_MATMUL))
        return Error(e.span(), "unknown binary operator");
      out->binary_op = static_cast<BinaryOp>(e.binary().op() - 1);
      if (!e.binary().user_function().empty()) {
        WARPD_RETURN_IF_ERROR(CheckIdentifier(e.span(), e.binary().user_function(), "function name"));
        out->user_function = e.binary().user_function();
      }
      WARPD_RETURN_IF_ERROR(add(e.binary().left(), "left operand"));
      WARPD_RETURN_IF_ERROR(add(e.binary().right(), "right operand"));
      break;
    case v1::Expr::kUnary:
      out->kind = ExprKind::Unary;
      if (!InRange(e.unary().op(), v1::UNARY_NEG, v1::UNARY_INVERT))
        return Error(e.span(), "unknown unary operator");
      out->unary_op = static_cast<UnaryOp>(e.unary().op() - 1);
      if (!e.unary().user_function().empty()) {
        WARPD_RETURN_IF_ERROR(CheckIdentifier(e.span(), e.unary().user_function(), "function name"));
        out->user_function = e.unary().user_function();
      }
      WARPD_RETURN_IF_ERROR(add(e.unary().operand(), "operand"));
      break;
    case v1::Expr::kCompare: {
      out->kind = ExprKind::Compare;
      const auto& c = e.compare();
      if (c.ops_size() == 0 || c.ops_size() != c.comparators_size())
        return Error(e.span(), "comparison needs as many operators as comparators");
      WARPD_RETURN_IF_ERROR(add(c.left(), "left operand"));
      for (int i = 0; i < c.ops_size(); ++i) {
        if (!InRange(c.ops(i), v1::CMP_EQ, v1::CMP_GE)) return Error(e.span(), "unknown comparison operator");
        out->compare_ops.push_back(static_cast<CompareOp>(c.ops(i) - 1));
        WARPD_RETURN_IF_ERROR(add(c.comparators(i), "comparator"));
      }
      break;
    }
    case v1::Expr::kBoolOp:
      out->kind = ExprKind::BoolOp;
      if (!InRange(e.bool_op().op(), v1::BOOL_AND, v1::BOOL_OR)) return Error(e.span(), "unknown boolean operator");
      if (e.bool_op().values_size() < 2) return Error(e.span(), "boolean operator needs two or more values");
      out->bool_op = e.bool_op().op() == v1::BOOL_AND ? BoolOpKind::kAnd : BoolOpKind::kOr;
      for (const auto& v : e.bool_op().values()) WARPD_RETURN_IF_ERROR(add(v, "value"));
      break;
    case v1::Expr::kCall: {
      out->kind = ExprKind::Call;
      const auto& c = e.call();
      if (c.kind() == v1::CALLEE_BUILTIN) {
        out->callee_kind = CalleeKind::kBuiltin;
        if (c.callee().size() > static_cast<size_t>(limits_.max_identifier) || !IsDottedName(c.callee()))
          return Error(e.span(), absl::StrCat("invalid callee name '", c.callee(), "'"));
      } else if (c.kind() == v1::CALLEE_FUNCTION) {
        out->callee_kind = CalleeKind::kFunction;
        WARPD_RETURN_IF_ERROR(CheckIdentifier(e.span(), c.callee(), "function name"));
      } else {
        return Error(e.span(), "call without a callee kind");
      }
      out->name = c.callee();
      if (!c.written().empty()) {
        if (c.written().size() > static_cast<size_t>(limits_.max_identifier) || !IsDottedName(c.written()))
          return Error(e.span(), "invalid written callee name");
        out->written = c.written();
      }
      out->grad = c.grad();
      if (c.args_size() + c.keywords_size() > limits_.max_params)
        return Error(e.span(), "too many call arguments");
      for (const auto& a : c.args()) WARPD_RETURN_IF_ERROR(add(a, "argument"));
      for (const auto& k : c.keywords()) {
        WARPD_RETURN_IF_ERROR(CheckIdentifier(e.span(), k.name(), "keyword"));
        out->keywords.push_back(k.name());
        WARPD_RETURN_IF_ERROR(add(k.value(), "keyword value"));
      }
      break;
    }
    case v1::Expr::kSubscript:
      out->kind = ExprKind::Subscript;
      if (e.subscript().indices_size() == 0) return Error(e.span(), "subscript without an index");
      if (e.subscript().indices_size() > 4) return Error(e.span(), "more than 4 indices");
      WARPD_RETURN_IF_ERROR(add(e.subscript().value(), "subscripted value"));
      for (const auto& i : e.subscript().indices()) WARPD_RETURN_IF_ERROR(add(i, "index"));
      break;
    case v1::Expr::kAttribute:
      out->kind = ExprKind::Attribute;
      WARPD_RETURN_IF_ERROR(CheckIdentifier(e.span(), e.attribute().attr(), "attribute"));
      out->name = e.attribute().attr();
      WARPD_RETURN_IF_ERROR(add(e.attribute().value(), "attribute owner"));
      break;
    case v1::Expr::kIfExp:
      out->kind = ExprKind::IfExp;
      WARPD_RETURN_IF_ERROR(add(e.if_exp().test(), "condition"));
      WARPD_RETURN_IF_ERROR(add(e.if_exp().body(), "value"));
      WARPD_RETURN_IF_ERROR(add(e.if_exp().orelse(), "else value"));
      break;
    case v1::Expr::kTuple:
      out->kind = ExprKind::Tuple;
      if (e.tuple().elements_size() > 16) return Error(e.span(), "tuple longer than 16 elements");
      for (const auto& el : e.tuple().elements()) WARPD_RETURN_IF_ERROR(add(el, "tuple element"));
      break;
    case v1::Expr::kTypeValue: {
      out->kind = ExprKind::TypeValue;
      auto t = TypeFromProto(e.type_value(), *module_->types);
      if (!t.ok()) return Error(e.span(), t.status().message());
      out->type_value = *t;
      break;
    }
    default:
      return Error(e.span(), "expression without a kind");
  }
  return out;
}

absl::Status Converter::ConvertBlock(const google::protobuf::RepeatedPtrField<v1::Stmt>& in, Block* out,
                                     int depth) {
  for (const auto& s : in) {
    auto st = ConvertStmt(s, depth);
    if (!st.ok()) return st.status();
    out->push_back(*std::move(st));
  }
  return absl::OkStatus();
}

absl::StatusOr<StmtPtr> Converter::ConvertStmt(const v1::Stmt& s, int depth) {
  if (depth > limits_.max_depth)
    return Error(s.span(), absl::StrCat("statements nested deeper than ", limits_.max_depth, " levels"));
  WARPD_RETURN_IF_ERROR(CountNode(s.span()));
  if (++statements_ > limits_.max_statements)
    return Error(s.span(), absl::StrCat("function '", function_, "' has more than ", limits_.max_statements,
                                        " statements; split it into smaller functions"));
  auto out = std::make_unique<Stmt>();
  out->span = ToSpan(s.span());
  auto expr = [&](const v1::Expr& e, absl::string_view what, ExprPtr* slot) -> absl::Status {
    auto c = ConvertOptional(e, s.span(), depth + 1, what);
    if (!c.ok()) return c.status();
    *slot = *std::move(c);
    return absl::OkStatus();
  };
  switch (s.kind_case()) {
    case v1::Stmt::kAssign:
      out->kind = StmtKind::Assign;
      WARPD_RETURN_IF_ERROR(expr(s.assign().target(), "assignment target", &out->target));
      WARPD_RETURN_IF_ERROR(expr(s.assign().value(), "assigned value", &out->value));
      if (s.assign().has_annotation()) {
        auto t = TypeFromProto(s.assign().annotation(), *module_->types);
        if (!t.ok()) return Error(s.span(), t.status().message());
        out->annotation = *t;
      }
      break;
    case v1::Stmt::kAugAssign:
      out->kind = StmtKind::AugAssign;
      if (!InRange(s.aug_assign().op(), v1::BINOP_ADD, v1::BINOP_MATMUL))
        return Error(s.span(), "unknown augmented assignment operator");
      out->binary_op = static_cast<BinaryOp>(s.aug_assign().op() - 1);
      WARPD_RETURN_IF_ERROR(expr(s.aug_assign().target(), "assignment target", &out->target));
      WARPD_RETURN_IF_ERROR(expr(s.aug_assign().value(), "assigned value", &out->value));
      if (!s.aug_assign().user_function().empty()) {
        WARPD_RETURN_IF_ERROR(CheckIdentifier(s.span(), s.aug_assign().user_function(), "function name"));
        out->user_function = s.aug_assign().user_function();
      }
      break;
    case v1::Stmt::kExpr:
      out->kind = StmtKind::ExprStmt;
      WARPD_RETURN_IF_ERROR(expr(s.expr().value(), "expression", &out->value));
      break;
    case v1::Stmt::kIfStmt:
      out->kind = StmtKind::If;
      WARPD_RETURN_IF_ERROR(expr(s.if_stmt().test(), "condition", &out->value));
      WARPD_RETURN_IF_ERROR(ConvertBlock(s.if_stmt().body(), &out->body, depth + 1));
      WARPD_RETURN_IF_ERROR(ConvertBlock(s.if_stmt().orelse(), &out->orelse, depth + 1));
      break;
    case v1::Stmt::kForStmt:
      out->kind = StmtKind::For;
      WARPD_RETURN_IF_ERROR(expr(s.for_stmt().target(), "loop variable", &out->target));
      WARPD_RETURN_IF_ERROR(expr(s.for_stmt().iter(), "loop iterator", &out->value));
      WARPD_RETURN_IF_ERROR(ConvertBlock(s.for_stmt().body(), &out->body, depth + 1));
      break;
    case v1::Stmt::kWhileStmt:
      out->kind = StmtKind::While;
      WARPD_RETURN_IF_ERROR(expr(s.while_stmt().test(), "condition", &out->value));
      WARPD_RETURN_IF_ERROR(ConvertBlock(s.while_stmt().body(), &out->body, depth + 1));
      break;
    case v1::Stmt::kReturnStmt:
      out->kind = StmtKind::Return;
      if (s.return_stmt().has_value()) WARPD_RETURN_IF_ERROR(expr(s.return_stmt().value(), "return value", &out->value));
      break;
    case v1::Stmt::kBreakStmt: out->kind = StmtKind::Break; break;
    case v1::Stmt::kContinueStmt: out->kind = StmtKind::Continue; break;
    case v1::Stmt::kPassStmt: out->kind = StmtKind::Pass; break;
    default:
      return Error(s.span(), "statement without a kind");
  }
  return out;
}

absl::StatusOr<std::unique_ptr<Module>> Converter::Convert(const v1::Module& proto) {
  auto module = std::make_unique<Module>();
  module_ = module.get();
  if (proto.name().size() > static_cast<size_t>(limits_.max_text))
    return absl::InvalidArgumentError(
        absl::StrCat("malformed module: the module name is longer than ", limits_.max_text, " bytes"));
  module->name = proto.name();
  module->backward = proto.backward();
  if (proto.functions_size() > limits_.max_functions)
    return absl::InvalidArgumentError(
        absl::StrCat("malformed module: more than ", limits_.max_functions, " functions"));
  std::unordered_map<std::string, int> names;
  for (const auto& f : proto.functions()) {
    WARPD_RETURN_IF_ERROR(CheckIdentifier(f.span(), f.name(), "function name"));
    if (!names.emplace(f.name(), 0).second)
      return Error(f.span(), absl::StrCat("duplicate function name '", f.name(), "'"));
    Function fn;
    fn.name = f.name();
    fn.overload_set = f.overload_set().empty() ? f.name() : f.overload_set();
    for (const std::string* named : {&f.custom_grad(), &f.custom_replay()})
      if (!named->empty()) WARPD_RETURN_IF_ERROR(CheckIdentifier(f.span(), *named, "custom gradient or replay name"));
    fn.custom_grad = f.custom_grad();
    fn.custom_replay = f.custom_replay();
    if (!f.overload_set().empty()) {
      WARPD_RETURN_IF_ERROR(CheckIdentifier(f.span(), f.overload_set(), "overload set name"));
      if (f.kind() != v1::FUNCTION_FUNC) return Error(f.span(), "only @wp.func functions have overloads");
    }
    fn.display_name = f.display_name().empty() ? f.name() : f.display_name();
    if (fn.display_name.size() > static_cast<size_t>(limits_.max_identifier))
      return Error(f.span(), "display name too long");
    fn.span = ToSpan(f.span());
    if (f.kind() == v1::FUNCTION_KERNEL) {
      fn.kind = FunctionKind::kKernel;
    } else if (f.kind() == v1::FUNCTION_FUNC) {
      fn.kind = FunctionKind::kFunc;
    } else {
      return Error(f.span(), absl::StrCat("function '", f.name(), "' has no kind (kernel or func)"));
    }
    if (f.params_size() > limits_.max_params)
      return Error(f.span(), absl::StrCat("function '", f.name(), "' has more than ", limits_.max_params,
                                          " parameters"));
    std::unordered_map<std::string, int> params;
    for (const auto& p : f.params()) {
      const auto& span = p.has_span() ? p.span() : f.span();
      WARPD_RETURN_IF_ERROR(CheckIdentifier(span, p.name(), "parameter name"));
      if (!params.emplace(p.name(), 0).second)
        return Error(span, absl::StrCat("duplicate parameter '", p.name(), "'"));
      if (!p.has_type() || p.type().kind_case() == v1::TypeRef::KIND_NOT_SET)
        return Error(span, absl::StrCat("parameter '", p.name(), "' of '", f.name(),
                                        "' needs a type annotation"));
      if (p.type().kind_case() == v1::TypeRef::kAny) {
        if (fn.kind == FunctionKind::kKernel)
          return Error(span, absl::StrCat("parameter '", p.name(), "': kernels need concrete parameter types "
                                          "(typing.Any is for @wp.func parameters)"));
        fn.params.push_back(Param{p.name(), nullptr, ToSpan(span), true});
        continue;
      }
      if (p.type().kind_case() == v1::TypeRef::kTuple) {
        if (fn.kind == FunctionKind::kKernel)
          return Error(span, absl::StrCat("parameter '", p.name(), "': kernel parameters cannot be tuples"));
        const v1::TupleType& tt = p.type().tuple();
        if (tt.variadic()) {
          // tuple[T, ...]: generic over the length (one instance per length).
          if (tt.elements_size() != 1)
            return Error(span, absl::StrCat("parameter '", p.name(), "': a variadic tuple names one element type"));
          auto e = TypeFromProto(tt.elements(0), *module->types);
          if (!e.ok()) return Error(span, absl::StrCat("parameter '", p.name(), "': ", e.status().message()));
          if ((*e)->is_array())
            return Error(span, absl::StrCat("parameter '", p.name(), "': tuple elements must be values, not arrays"));
          Param param{p.name(), nullptr, ToSpan(span), true};
          param.tuple_of = *e;
          fn.params.push_back(std::move(param));
          continue;
        }
      }
      auto t = FunctionTypeFromProto(p.type(), *module->types);
      if (!t.ok())
        return Error(span, absl::StrCat("parameter '", p.name(), "': ", t.status().message()));
      if ((*t)->is_query() && fn.kind == FunctionKind::kKernel)
        return Error(span, absl::StrCat("parameter '", p.name(), "': kernel parameters cannot be ", (*t)->ToString(),
                                        " (queries are made in the kernel by their query builtin)"));
      fn.params.push_back(Param{p.name(), *t, ToSpan(span)});
    }
    if (f.has_return_type()) {
      auto t = FunctionTypeFromProto(f.return_type(), *module->types);
      if (!t.ok()) return Error(f.span(), absl::StrCat("return type: ", t.status().message()));
      fn.declared_return = *t;
      if (f.return_annotation().size() > static_cast<size_t>(limits_.max_text))
        return Error(f.span(), "return annotation text too long");
      fn.return_annotation = f.return_annotation();
    }
    statements_ = 0;
    function_ = fn.display_name;
    WARPD_RETURN_IF_ERROR(ConvertBlock(f.body(), &fn.body, 1));
    module->functions.push_back(std::move(fn));
  }
  for (const std::string& file : module->files)
    if (file.size() > static_cast<size_t>(limits_.max_text))
      return absl::InvalidArgumentError(absl::StrCat("malformed module: a source file name is longer than ",
                                                     limits_.max_text, " bytes"));
  return module;
}

}  // namespace

absl::StatusOr<TypeRef> FunctionTypeFromProto(const v1::TypeRef& proto, types::TypeTable& table) {
  if (proto.kind_case() == v1::TypeRef::kQuery) {
    const v1::QueryType& q = proto.query();
    const std::optional<ScalarKind> s = ScalarFromProto(q.dtype());
    if (q.kind() == v1::QUERY_HASH_GRID) {
      if (!s || (*s != ScalarKind::kFloat16 && *s != ScalarKind::kFloat32 && *s != ScalarKind::kFloat64))
        return absl::InvalidArgumentError("HashGridQuery takes float16, float32 or float64");
      return table.HashGridQuery(*s);
    }
    if (q.kind() == v1::QUERY_BVH_AABB || q.kind() == v1::QUERY_BVH_RAY || q.kind() == v1::QUERY_BVH_CAPSULE ||
        q.kind() == v1::QUERY_BVH_SPHERE || q.kind() == v1::QUERY_MESH_POINT || q.kind() == v1::QUERY_MESH_RAY ||
        q.kind() == v1::QUERY_MESH_AABB || q.kind() == v1::QUERY_MESH_SPHERE || q.kind() == v1::QUERY_BVH ||
        q.kind() == v1::QUERY_MESH) {
      if (s && *s != ScalarKind::kFloat32) return absl::InvalidArgumentError("BvhQuery takes float32 only");
      // The proto's and the type table's kinds are numbered alike.
      return table.Query(static_cast<types::QueryKind>(q.kind()), ScalarKind::kFloat32);
    }
    return absl::InvalidArgumentError("unknown query type");
  }
  if (proto.kind_case() != v1::TypeRef::kTuple) return TypeFromProto(proto, table);
  const v1::TupleType& tt = proto.tuple();
  if (tt.variadic()) return absl::InvalidArgumentError("a variadic tuple (tuple[T, ...]) is a parameter type only");
  if (tt.elements_size() < 1 || tt.elements_size() > types::kMaxTupleElements)
    return absl::InvalidArgumentError(
        absl::StrCat("a tuple has 1 to ", types::kMaxTupleElements, " elements, not ", tt.elements_size()));
  std::vector<TypeRef> elements;
  for (const v1::TypeRef& e : tt.elements()) {
    auto t = TypeFromProto(e, table);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("tuple element: ", t.status().message()));
    elements.push_back(*t);
  }
  return table.Tuple(std::move(elements));
}

absl::StatusOr<std::unique_ptr<Module>> ModuleFromProto(const v1::Module& proto, const Limits& limits) {
  return Converter(limits).Convert(proto);
}

absl::StatusOr<TypeRef> TypeFromProto(const v1::TypeRef& proto, types::TypeTable& table, int max_depth) {
  if (max_depth <= 0) return absl::InvalidArgumentError("types are nested too deeply");
  auto scalar = [](v1::ScalarType p, absl::string_view what) -> absl::StatusOr<ScalarKind> {
    auto s = ScalarFromProto(p);
    if (!s) return absl::InvalidArgumentError(absl::StrCat(what, ": unknown scalar type"));
    return *s;
  };
  switch (proto.kind_case()) {
    case v1::TypeRef::kScalar: {
      WARPD_ASSIGN_OR_RETURN(ScalarKind s, scalar(proto.scalar(), "scalar"));
      return table.Scalar(s);
    }
    case v1::TypeRef::kVector: {
      WARPD_ASSIGN_OR_RETURN(ScalarKind s, scalar(proto.vector().dtype(), "vector dtype"));
      return table.CheckedVector(proto.vector().length(), s);
    }
    case v1::TypeRef::kMatrix: {
      WARPD_ASSIGN_OR_RETURN(ScalarKind s, scalar(proto.matrix().dtype(), "matrix dtype"));
      return table.CheckedMatrix(proto.matrix().rows(), proto.matrix().cols(), s);
    }
    case v1::TypeRef::kQuat: {
      WARPD_ASSIGN_OR_RETURN(ScalarKind s, scalar(proto.quat().dtype(), "quaternion dtype"));
      return table.CheckedQuat(s);
    }
    case v1::TypeRef::kTransform: {
      WARPD_ASSIGN_OR_RETURN(ScalarKind s, scalar(proto.transform().dtype(), "transformation dtype"));
      return table.CheckedTransform(s);
    }
    case v1::TypeRef::kStructType: {
      const v1::StructType& st = proto.struct_type();
      if (st.members_size() > types::kMaxStructMembers)
        return absl::InvalidArgumentError(absl::StrCat("a struct has more than ", types::kMaxStructMembers, " members"));
      if (st.display_name().size() > 256) return absl::InvalidArgumentError("a struct's display name is too long");
      std::vector<std::pair<std::string, TypeRef>> members;
      for (const v1::StructMember& m : st.members()) {
        auto t = TypeFromProto(m.type(), table, max_depth - 1);
        if (!t.ok())
          return absl::InvalidArgumentError(absl::StrCat("struct member '", m.name().substr(0, 64), "': ", t.status().message()));
        members.push_back({m.name(), *t});
      }
      return table.Struct(st.name(), st.display_name(), std::move(members));
    }
    case v1::TypeRef::kArray: {
      const auto& a = proto.array();
      if (a.dtype().kind_case() == v1::TypeRef::kArray)
        return absl::InvalidArgumentError("arrays of arrays are not supported");
      auto elem = TypeFromProto(a.dtype(), table, max_depth - 1);
      if (!elem.ok()) return absl::InvalidArgumentError(absl::StrCat("array dtype: ", elem.status().message()));
      return table.CheckedArray(*elem, a.ndim(), a.indexed());
    }
    default:
      return absl::InvalidArgumentError("type without a kind");
  }
}

v1::TypeRef TypeToProto(TypeRef type) {
  v1::TypeRef out;
  switch (type->kind()) {
    case types::Kind::kScalar:
      out.set_scalar(ScalarToProto(type->scalar()));
      break;
    case types::Kind::kVector:
      out.mutable_vector()->set_length(type->length());
      out.mutable_vector()->set_dtype(ScalarToProto(type->scalar()));
      break;
    case types::Kind::kMatrix:
      out.mutable_matrix()->set_rows(type->rows());
      out.mutable_matrix()->set_cols(type->cols());
      out.mutable_matrix()->set_dtype(ScalarToProto(type->scalar()));
      break;
    case types::Kind::kQuat:
      out.mutable_quat()->set_dtype(ScalarToProto(type->scalar()));
      break;
    case types::Kind::kTransform:
      out.mutable_transform()->set_dtype(ScalarToProto(type->scalar()));
      break;
    case types::Kind::kStruct: {
      auto* st = out.mutable_struct_type();
      st->set_name(type->struct_name());
      st->set_display_name(type->display_name());
      for (const types::Member& m : type->members()) {
        auto* pm = st->add_members();
        pm->set_name(m.name);
        *pm->mutable_type() = TypeToProto(m.type);
      }
      break;
    }
    case types::Kind::kArray:
      *out.mutable_array()->mutable_dtype() = TypeToProto(type->element());
      out.mutable_array()->set_ndim(type->ndim());
      if (type->is_indexed_array()) out.mutable_array()->set_indexed(true);
      break;
    case types::Kind::kQuery:
      out.mutable_query()->set_kind(static_cast<v1::QueryKind>(type->query_kind()));
      out.mutable_query()->set_dtype(ScalarToProto(type->scalar()));
      break;
    case types::Kind::kVoid:
    case types::Kind::kTuple:  // never a declared type
      break;
  }
  return out;
}

}  // namespace warpd::ir
