"""Python AST -> warpd.v1 IR for one kernel or user function.

The front end translates syntax and resolves Python names; it does not
type-check (the daemon does, and reports errors with the user's file:line).
Name resolution, for a name that is not a local variable of the function:

- user functions (@wp.func) become CALLEE_FUNCTION calls by their IR name and
  are returned as dependencies so the module includes them;
- Warp builtins (``wp.dot``, ``wp.tid``, ``float``, ``range``, ``wp.vec3``)
  become CALLEE_BUILTIN calls by Warp's builtin name; an attribute of the
  warpd package that Python does not define (``wp.sin``) is a builtin of that
  name, and any other unknown callee is emitted by its dotted name;
- int/float/bool globals and ``wp.constant`` values are inlined as Constants;
  vector, matrix, quaternion and transformation values as constructor calls
  of typed constants; types used as values become ``type_value`` TypeRefs;
- value types used as callees (``wp.mat33(...)``, ``vec5d(...)`` for
  ``vec5d = wp.types.vector(5, wp.float64)``) construct through the type's
  family (types/family.py): by builtin name, or the generic ``vector``/
  ``matrix`` builtins with ``length=``/``shape=`` and ``dtype=`` keywords;
- anything else stays a Name for the daemon to report.

Every statement and expression carries its SourceSpan (file, absolute 1-based
line and column). Syntax with no IR form (strings, lists, lambdas, slices)
raises CompileError "file:line:col: error: ..." here.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import numbers
import re
import types as pytypes

import numpy as np

from . import types as wt
from .errors import CompileError
from .v1 import ir_pb2

_MISSING = object()
_LOCAL = object()

_BINOPS = {
    ast.Add: ir_pb2.BINOP_ADD, ast.Sub: ir_pb2.BINOP_SUB, ast.Mult: ir_pb2.BINOP_MUL,
    ast.Div: ir_pb2.BINOP_DIV, ast.FloorDiv: ir_pb2.BINOP_FLOOR_DIV, ast.Mod: ir_pb2.BINOP_MOD,
    ast.Pow: ir_pb2.BINOP_POW, ast.BitAnd: ir_pb2.BINOP_BIT_AND, ast.BitOr: ir_pb2.BINOP_BIT_OR,
    ast.BitXor: ir_pb2.BINOP_BIT_XOR, ast.LShift: ir_pb2.BINOP_LSHIFT,
    ast.RShift: ir_pb2.BINOP_RSHIFT, ast.MatMult: ir_pb2.BINOP_MATMUL,
}
_UNARYOPS = {ast.USub: ir_pb2.UNARY_NEG, ast.UAdd: ir_pb2.UNARY_POS, ast.Not: ir_pb2.UNARY_NOT,
             ast.Invert: ir_pb2.UNARY_INVERT}
_CMPOPS = {ast.Eq: ir_pb2.CMP_EQ, ast.NotEq: ir_pb2.CMP_NE, ast.Lt: ir_pb2.CMP_LT,
           ast.LtE: ir_pb2.CMP_LE, ast.Gt: ir_pb2.CMP_GT, ast.GtE: ir_pb2.CMP_GE}
_BOOLOPS = {ast.And: ir_pb2.BOOL_AND, ast.Or: ir_pb2.BOOL_OR}

# Python builtins that are Warp builtins under another name.
_PY_BUILTIN_NAMES = {builtins.float: "float32", builtins.int: "int32", builtins.bool: "bool"}

_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1


def mangle(func) -> str:
    """A C identifier unique to func's definition: "<name>_<8 hex digits>"."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", func.__name__.encode("ascii", "replace").decode())
    if not base or base[0].isdigit():
        base = "f_" + base
    try:
        src = inspect.getsource(func)
    except (OSError, TypeError):
        src = ""
    h = hashlib.sha256(f"{func.__module__}\0{func.__qualname__}\0{src}".encode()).hexdigest()
    return f"{base}_{h[:8]}"


def _is_warp_module(obj) -> bool:
    if not isinstance(obj, pytypes.ModuleType):
        return False
    name = obj.__name__
    return name in ("warpd", "warp") or name.startswith(("warpd.", "warp."))


def builtin_name(obj) -> str | None:
    """Warp's builtin name for a resolved Python object used as a callee."""
    if obj in _PY_BUILTIN_NAMES:
        return _PY_BUILTIN_NAMES[obj]
    if isinstance(obj, type) and wt.is_scalar_type(obj):
        return wt.scalar_type(obj)._wp_name_
    if isinstance(obj, type) and wt.is_value_type(obj):
        return obj._wp_builtin_ or None
    if isinstance(obj, pytypes.BuiltinFunctionType) or isinstance(obj, type):
        if getattr(builtins, getattr(obj, "__name__", ""), None) is obj:
            return obj.__name__
    mod = getattr(obj, "__module__", None) or ""
    if callable(obj) and (mod == "warpd" or mod.startswith("warpd.")):
        # Only Python-scope versions of kernel builtins (pyscope.py) carry a name;
        # wp.init, wp.zeros, ... are no builtins, and stay dotted names for the daemon.
        return getattr(obj, "_wp_builtin_", None) or None
    return None


class SourceFunction:
    """The parsed source of a Python function and where it sits in its file."""

    def __init__(self, func):
        self.func = func
        try:
            self.file = inspect.getsourcefile(func) or inspect.getfile(func)
            lines, start = inspect.getsourcelines(func)
        except (OSError, TypeError) as e:
            raise CompileError(f"cannot read the source of '{func.__qualname__}' ({e}); warpd "
                               f"kernels and functions must be defined in a file") from None
        src = "".join(lines)
        first = lines[0] if lines else ""
        indented = first[:1] in (" ", "\t")
        if indented:
            # Keep the columns exact: wrap instead of dedenting.
            src = "if 1:\n" + src
            self.line_base = start - 2
        else:
            self.line_base = start - 1
        tree = ast.parse(src)
        body = tree.body[0].body if indented else tree.body
        defs = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not defs:
            raise CompileError(f"{self.file}:{start}:1: error: no function definition found for "
                               f"'{func.__qualname__}'")
        self.node = defs[0]


class Translator:
    """Translates one function. Use ``translate()``."""

    def __init__(self, func, kind, ir_name: str, function_type):
        self.func = func
        self.kind = kind
        self.ir_name = ir_name
        self.function_type = function_type  # warpd.kernel.Function, to recognize user functions
        self.src = SourceFunction(func)
        self.file = self.src.file
        self.closure = {}
        code = func.__code__
        if func.__closure__:
            for name, cell in zip(code.co_freevars, func.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass
        self.globals = func.__globals__
        self.locals: set[str] = set()
        self.deps: list = []

    # --------------------------------------------------------------- helpers

    def span(self, node) -> ir_pb2.SourceSpan:
        return ir_pb2.SourceSpan(file=self.file, line=self.src.line_base + node.lineno,
                                 col=node.col_offset + 1)

    def error(self, node, msg):
        line = self.src.line_base + getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + 1
        return CompileError(f"{self.file}:{line}:{col}: error: {msg}")

    def lookup(self, name):
        if name in self.closure:
            return self.closure[name]
        if name in self.globals:
            return self.globals[name]
        return getattr(builtins, name, _MISSING)

    def resolve(self, node):
        """The Python object a Name/Attribute chain denotes; _LOCAL or _MISSING otherwise."""
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                return _LOCAL
            return self.lookup(node.id)
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is _LOCAL or base is _MISSING:
                return base
            try:
                return getattr(base, node.attr)
            except AttributeError:
                return _MISSING
        return _LOCAL

    def dotted(self, node) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def unresolved_warp_attr(self, node) -> str | None:
        """For ``wp.name`` where warpd has no attribute ``name``: "name"."""
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is not _LOCAL and base is not _MISSING and _is_warp_module(base) \
                    and not hasattr(base, node.attr):
                return node.attr
        return None

    def evaluate_annotation(self, ann):
        if isinstance(ann, str):
            ns = dict(self.globals)
            ns.update(self.closure)
            return eval(ann, ns)  # noqa: S307 - the user's own annotation
        return ann

    def typeref_of(self, ann, node, what) -> ir_pb2.TypeRef:
        try:
            obj = self.evaluate_annotation(ann)
        except Exception as e:
            raise self.error(node, f"cannot evaluate the type annotation of {what}: {e}") from None
        tr = wt.to_typeref(obj)
        if tr is None:
            raise self.error(node, f"unsupported type annotation {obj!r} for {what}: expected a "
                                   f"scalar, vector, matrix, quaternion, transformation or "
                                   f"@wp.struct type, or wp.array(dtype=..., ndim=...)")
        return tr

    # ------------------------------------------------------------ function

    def translate(self) -> ir_pb2.Function:
        node = self.src.node
        if isinstance(node, ast.AsyncFunctionDef):
            raise self.error(node, "async functions are not supported")
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs:
            raise self.error(node, "only plain positional parameters are supported")
        if args.defaults:
            raise self.error(args.defaults[0], "default parameter values are not supported")
        params = [a.arg for a in args.args]
        self.locals = set(params)
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                self.locals.add(n.id)
        fn = ir_pb2.Function(name=self.ir_name, kind=self.kind, span=self.span(node),
                             display_name=node.name)
        annotations = getattr(self.func, "__annotations__", {})
        for a in args.args:
            p = fn.params.add(name=a.arg, span=self.span(a))
            if a.arg in annotations:
                p.type.CopyFrom(self.typeref_of(annotations[a.arg], a, f"parameter '{a.arg}'"))
        ret = annotations.get("return", None)
        if ret is not None and self.kind == ir_pb2.FUNCTION_FUNC:
            fn.return_type.CopyFrom(self.typeref_of(ret, node, "the return value"))
        body = node.body
        if body and _is_docstring(body[0]):
            body = body[1:]
        fn.body.extend(self.block(body))
        return fn

    # ------------------------------------------------------------ statements

    def block(self, stmts) -> list:
        out = []
        for s in stmts:
            out.extend(self.stmt(s))
        return out

    def stmt(self, node) -> list:
        span = self.span(node)
        if isinstance(node, ast.Assign):
            return self.assign(node, span)
        if isinstance(node, ast.AnnAssign):
            if node.value is None:
                raise self.error(node, "a declaration needs a value ('x: float = 0.0')")
            name = self.dotted(node.target) or "the target"
            s = ir_pb2.Stmt(span=span)
            s.assign.target.CopyFrom(self.target(node.target))
            s.assign.value.CopyFrom(self.expr(node.value))
            s.assign.annotation.CopyFrom(self.typeref_of(
                _annotation_object(self, node.annotation), node.annotation, f"'{name}'"))
            return [s]
        if isinstance(node, ast.AugAssign):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise self.error(node, f"unsupported operator {type(node.op).__name__}")
            s = ir_pb2.Stmt(span=span)
            s.aug_assign.target.CopyFrom(self.target(node.target))
            s.aug_assign.op = op
            s.aug_assign.value.CopyFrom(self.expr(node.value))
            return [s]
        if isinstance(node, ast.Expr):
            if _is_docstring(node):
                return []
            s = ir_pb2.Stmt(span=span)
            s.expr.value.CopyFrom(self.expr(node.value))
            return [s]
        if isinstance(node, ast.If):
            s = ir_pb2.Stmt(span=span)
            s.if_stmt.test.CopyFrom(self.expr(node.test))
            s.if_stmt.body.extend(self.block(node.body))
            s.if_stmt.orelse.extend(self.block(node.orelse))
            return [s]
        if isinstance(node, ast.For):
            if node.orelse:
                raise self.error(node.orelse[0], "'for ... else' is not supported")
            s = ir_pb2.Stmt(span=span)
            s.for_stmt.target.CopyFrom(self.target(node.target))
            s.for_stmt.iter.CopyFrom(self.expr(node.iter))
            s.for_stmt.body.extend(self.block(node.body))
            return [s]
        if isinstance(node, ast.While):
            if node.orelse:
                raise self.error(node.orelse[0], "'while ... else' is not supported")
            s = ir_pb2.Stmt(span=span)
            s.while_stmt.test.CopyFrom(self.expr(node.test))
            s.while_stmt.body.extend(self.block(node.body))
            return [s]
        if isinstance(node, ast.Return):
            s = ir_pb2.Stmt(span=span)
            s.return_stmt.SetInParent()
            if node.value is not None:
                s.return_stmt.value.CopyFrom(self.expr(node.value))
            return [s]
        if isinstance(node, ast.Break):
            s = ir_pb2.Stmt(span=span)
            s.break_stmt.SetInParent()
            return [s]
        if isinstance(node, ast.Continue):
            s = ir_pb2.Stmt(span=span)
            s.continue_stmt.SetInParent()
            return [s]
        if isinstance(node, ast.Pass):
            s = ir_pb2.Stmt(span=span)
            s.pass_stmt.SetInParent()
            return [s]
        what = {ast.FunctionDef: "nested function definitions", ast.ClassDef: "class definitions",
                ast.With: "'with' statements", ast.Try: "'try' statements",
                ast.Raise: "'raise'", ast.Import: "'import'", ast.ImportFrom: "'import'",
                ast.Global: "'global'", ast.Nonlocal: "'nonlocal'", ast.Delete: "'del'",
                ast.Assert: "'assert'"}.get(type(node), f"'{type(node).__name__}' statements")
        raise self.error(node, f"{what} are not supported in warpd kernels and functions")

    def assign(self, node, span) -> list:
        first = node.targets[0]
        s = ir_pb2.Stmt(span=span)
        s.assign.target.CopyFrom(self.target(first))
        s.assign.value.CopyFrom(self.expr(node.value))
        out = [s]
        for t in node.targets[1:]:
            if not isinstance(first, ast.Name):
                raise self.error(t, "chained assignment is only supported when the first target is a name")
            s2 = ir_pb2.Stmt(span=self.span(t))
            s2.assign.target.CopyFrom(self.target(t))
            s2.assign.value.name.id = first.id
            s2.assign.value.span.CopyFrom(self.span(first))
            out.append(s2)
        return out

    def target(self, node) -> ir_pb2.Expr:
        e = ir_pb2.Expr(span=self.span(node))
        if isinstance(node, ast.Name):
            e.name.id = node.id
        elif isinstance(node, (ast.Tuple, ast.List)):
            e.tuple.SetInParent()
            for elt in node.elts:
                e.tuple.elements.append(self.target(elt))
        elif isinstance(node, ast.Subscript):
            e.subscript.value.CopyFrom(self.expr(node.value))
            e.subscript.indices.extend(self.indices(node))
        elif isinstance(node, ast.Attribute):
            e.attribute.value.CopyFrom(self.expr(node.value))
            e.attribute.attr = node.attr
        else:
            raise self.error(node, f"cannot assign to {type(node).__name__}")
        return e

    # ----------------------------------------------------------- expressions

    def indices(self, node) -> list:
        sl = node.slice
        if isinstance(sl, ast.Index):  # Python < 3.9
            sl = sl.value
        items = sl.elts if isinstance(sl, ast.Tuple) else [sl]
        for it in items:
            if isinstance(it, ast.Slice):
                raise self.error(it, "slices are not supported; index with integers")
        return [self.expr(it) for it in items]

    def expr(self, node) -> ir_pb2.Expr:
        e = ir_pb2.Expr(span=self.span(node))
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                e.name.id = node.id
                return e
            obj = self.lookup(node.id)
            if obj is _MISSING or not self.value(e, obj):
                e.name.id = node.id
            return e
        if isinstance(node, ast.Constant):
            self.literal(e, node.value, node)
            return e
        if isinstance(node, ast.Attribute):
            obj = self.resolve(node)
            if obj is _LOCAL:
                e.attribute.value.CopyFrom(self.expr(node.value))
                e.attribute.attr = node.attr
                return e
            if obj is not _MISSING and self.value(e, obj):
                return e
            e.name.id = self.unresolved_warp_attr(node) or self.dotted(node) or node.attr
            return e
        if isinstance(node, ast.BinOp):
            op = _BINOPS.get(type(node.op))
            if op is None:
                raise self.error(node, f"unsupported operator {type(node.op).__name__}")
            e.binary.op = op
            e.binary.left.CopyFrom(self.expr(node.left))
            e.binary.right.CopyFrom(self.expr(node.right))
            return e
        if isinstance(node, ast.UnaryOp):
            e.unary.op = _UNARYOPS[type(node.op)]
            e.unary.operand.CopyFrom(self.expr(node.operand))
            return e
        if isinstance(node, ast.Compare):
            e.compare.left.CopyFrom(self.expr(node.left))
            for op, c in zip(node.ops, node.comparators):
                o = _CMPOPS.get(type(op))
                if o is None:
                    sym = {ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}
                    raise self.error(node, f"the '{sym.get(type(op), type(op).__name__)}' "
                                           f"operator is not supported")
                e.compare.ops.append(o)
                e.compare.comparators.append(self.expr(c))
            return e
        if isinstance(node, ast.BoolOp):
            e.bool_op.op = _BOOLOPS[type(node.op)]
            e.bool_op.values.extend(self.expr(v) for v in node.values)
            return e
        if isinstance(node, ast.Call):
            self.call(e, node)
            return e
        if isinstance(node, ast.Subscript):
            e.subscript.value.CopyFrom(self.expr(node.value))
            e.subscript.indices.extend(self.indices(node))
            return e
        if isinstance(node, ast.IfExp):
            e.if_exp.test.CopyFrom(self.expr(node.test))
            e.if_exp.body.CopyFrom(self.expr(node.body))
            e.if_exp.orelse.CopyFrom(self.expr(node.orelse))
            return e
        if isinstance(node, ast.Tuple):
            e.tuple.SetInParent()
            e.tuple.elements.extend(self.expr(x) for x in node.elts)
            return e
        what = {ast.List: "lists (use a vector type such as wp.vec3(...))", ast.Dict: "dicts",
                ast.Set: "sets", ast.Lambda: "lambdas", ast.ListComp: "comprehensions",
                ast.SetComp: "comprehensions", ast.DictComp: "comprehensions",
                ast.GeneratorExp: "generator expressions", ast.JoinedStr: "f-strings",
                ast.NamedExpr: "':=' expressions", ast.Starred: "'*' unpacking",
                ast.Slice: "slices"}.get(type(node), f"'{type(node).__name__}' expressions")
        raise self.error(node, f"{what} are not supported in warpd kernels and functions")

    def literal(self, e, v, node):
        if isinstance(v, bool):
            e.constant.bool_value = v
        elif isinstance(v, int):
            if not _INT64_MIN <= v <= _UINT64_MAX:
                raise self.error(node, f"integer constant {v} does not fit in 64 bits")
            e.constant.int_value = v if v < (1 << 63) else v - (1 << 64)
            if v >= (1 << 63):
                e.constant.dtype = ir_pb2.SCALAR_UINT64
        elif isinstance(v, float):
            e.constant.float_value = v
        elif isinstance(v, str):
            # Strings are arguments of print() and wp.printf() only (the daemon
            # checks this too); found once per function: the calls' string arguments.
            allowed = self.__dict__.get("_print_string_args")
            if allowed is None:
                allowed = set()
                for call in ast.walk(self.src.node):
                    if not (isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute))):
                        continue
                    obj = self.resolve(call.func)
                    name = builtin_name(obj) if obj is not _LOCAL and obj is not _MISSING else None
                    if (name or self.unresolved_warp_attr(call.func)) in ("print", "printf"):
                        allowed.update(id(a) for a in call.args if isinstance(a, ast.Constant))
                self._print_string_args = allowed
            if id(node) not in allowed:
                raise self.error(node, "string constants are supported only as arguments of print() and "
                                       "wp.printf()")
            try:
                v.encode("utf-8")
            except UnicodeEncodeError:
                raise self.error(node, "string constants must be valid Unicode text") from None
            e.constant.string_value = v
        else:
            raise self.error(node, f"the constant {v!r} is not supported in warpd kernels and functions")

    def value(self, e, obj) -> bool:
        """Fills e with the inlined value of a Python object; False if it has none."""
        if isinstance(obj, (bool, np.bool_)):
            e.constant.bool_value = bool(obj)
            if isinstance(obj, np.bool_):
                e.constant.dtype = ir_pb2.SCALAR_BOOL
            return True
        if isinstance(obj, wt._Scalar):
            st = type(obj)
            if st._kind_ == "bool":
                e.constant.bool_value = bool(obj.value)
            elif st._kind_ == "int":
                e.constant.int_value = _wrap_int64(int(obj.value))
            else:
                e.constant.float_value = float(obj.value)
            e.constant.dtype = st._proto_
            return True
        if isinstance(obj, (np.integer, np.floating)):
            st = wt.scalar_from_numpy(obj.dtype)
            if isinstance(obj, np.integer):
                e.constant.int_value = _wrap_int64(int(obj))
            else:
                e.constant.float_value = float(obj)
            if st is not None:
                e.constant.dtype = st._proto_
            return True
        if isinstance(obj, numbers.Integral):
            v = int(obj)
            if not _INT64_MIN <= v <= _UINT64_MAX:
                return False
            e.constant.int_value = _wrap_int64(v)
            if v >= (1 << 63):
                e.constant.dtype = ir_pb2.SCALAR_UINT64
            return True
        if isinstance(obj, numbers.Real):
            e.constant.float_value = float(obj)
            return True
        if isinstance(obj, wt.Value):
            # A vector, matrix, quaternion or transformation: its constructor called
            # with its components as typed constants (row-major for matrices).
            t = type(obj)
            t._wp_fill_ctor_(e.call, e.span)
            st = t._wp_scalar_type_
            for v in t._wp_components_(obj):
                self.value(e.call.args.add(span=e.span), st(v))
            return True
        if isinstance(obj, wt.Struct):
            raise CompileError(f"{e.span.file}:{e.span.line}:{e.span.col}: error: the struct "
                               f"value {type(obj).__name__}(...) cannot be used as a kernel "
                               f"constant; pass it as a kernel argument")
        if isinstance(obj, type):
            tr = wt.to_typeref(obj)
            if tr is not None:
                e.type_value.CopyFrom(tr)
                return True
        return False

    def call(self, e, node):
        call = e.call
        f = node.func
        obj = self.resolve(f) if isinstance(f, (ast.Name, ast.Attribute)) else _LOCAL
        if not isinstance(f, (ast.Name, ast.Attribute)):
            raise self.error(node, "only calls of named functions are supported")
        if isinstance(obj, self.function_type):
            call.kind = ir_pb2.CALLEE_FUNCTION
            call.callee = obj.ir_name
            if obj not in self.deps:
                self.deps.append(obj)
        elif isinstance(obj, type) and wt.is_value_type(obj) and not wt.is_scalar_type(obj):
            # A vector, matrix, quaternion, transformation or struct type used as a constructor.
            try:
                obj._wp_fill_ctor_(call, e.span)
            except NotImplementedError as err:
                raise self.error(node, str(err)) from None
        else:
            call.kind = ir_pb2.CALLEE_BUILTIN
            name = None
            if obj is not _LOCAL and obj is not _MISSING:
                name = builtin_name(obj)
            if name is None:
                name = self.unresolved_warp_attr(f) or self.dotted(f)
            call.callee = name
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.error(a, "'*' arguments are not supported")
            call.args.append(self.expr(a))
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw.value, "'**' arguments are not supported")
            k = call.keywords.add(name=kw.arg)
            k.value.CopyFrom(self.expr(kw.value))


def _annotation_object(tr: Translator, node):
    """Evaluates an annotation expression in the function's namespace."""
    ns = dict(tr.globals)
    ns.update(tr.closure)
    try:
        return eval(compile(ast.Expression(node), tr.file, "eval"), ns)  # noqa: S307
    except Exception as e:
        raise tr.error(node, f"cannot evaluate the type annotation: {e}") from None


def _is_docstring(node) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) \
        and isinstance(node.value.value, str)


def _wrap_int64(v: int) -> int:
    return v - (1 << 64) if v >= (1 << 63) else v


def translate(func, kind, ir_name: str, function_type):
    """(ir_pb2.Function, [user Function objects it calls]) for a Python function."""
    t = Translator(func, kind, ir_name, function_type)
    fn = t.translate()
    return fn, t.deps
