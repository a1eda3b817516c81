"""Python AST -> warpd.v1 IR for one kernel or user function.

The front end translates syntax and resolves Python names; it does not
type-check (the daemon does, and reports errors with the user's file:line).
Name resolution, for a name that is not a local variable of the function:

- user functions (@wp.func) become CALLEE_FUNCTION calls by the name of their
  overload set (function.py; the daemon picks the overload) and are returned
  as dependencies so the module includes them;
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

``wp.static(expr)`` never reaches the daemon: its value (evaluated when the
function was decorated, or here; staticexpr.py) replaces it as a constant, a
string for print(), or the callee of a call. ``if wp.static(...)`` keeps only
the branch taken; a for loop over a constant range() whose body uses its index
in wp.static() is unrolled. For that, the translator follows which locals hold
compile-time constants (``self.consts``), statement by statement.

A parameter annotated ``typing.Any`` is generic (TypeRef ``any``) in a
@wp.func and an error in a kernel; ``-> typing.Any`` is no return type.

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
import typing

import numpy as np

from . import identity, staticexpr, type_exprs
from . import types as wt
from .gradwrapper import GradWrapper, grad as _grad, is_function as _is_function
from .errors import CompileError, compile_error
from .v1 import ir_pb2

_MISSING = object()
# Warp's words for a kernel returning a value (the daemon says the same).
KERNEL_RETURN_TEXT = ("Warp kernels cannot return values. Write results to output arguments, and omit the "
                      "return annotation or use `-> None`.")
_LOCAL = object()

# The builtin each operator calls: a user function of that name in scope overloads it.
_OPERATOR_NAMES = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.FloorDiv: "floordiv",
    ast.Mod: "mod", ast.Pow: "pow", ast.BitAnd: "bit_and", ast.BitOr: "bit_or", ast.BitXor: "bit_xor",
    ast.LShift: "lshift", ast.RShift: "rshift", ast.MatMult: "mul",
    ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert",
}

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
_PY_BUILTIN_NAMES = {builtins.float: "float32", builtins.int: "int32", builtins.bool: "bool",
                     # wp.types.vector(length=..., dtype=...)(...) and the like, called in a
                     # kernel, are the generic constructors of the builtin table.
                     wt.vector: "vector", wt.matrix: "matrix", wt.quaternion: "quaternion",
                     wt.transformation: "transformation"}

_INT64_MIN, _UINT64_MAX = -(1 << 63), (1 << 64) - 1

# Most iterations of a loop unrolled for wp.static() (each one is a copy of the body).
_MAX_UNROLL = 4096
# Warp's default max_unroll: its longest loop over a constant range() unrolled without a wp.static().
_WARP_MAX_UNROLL = 16


def c_identifier(name: str) -> str:
    """name made a C identifier (what mangled names start with)."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", name.encode("ascii", "replace").decode())
    if not base or base[0].isdigit():
        base = "f_" + base
    return base


def module_of(func) -> str:
    """The name of func's Python module: "__main__" for a function made by exec() in a
    namespace without ``__name__`` (its ``__module__`` is None)."""
    return func.__module__ or "__main__"


def mangle(func, declared=None) -> str:
    """A C identifier unique to func's definition: "<name>_<8 hex digits>".

    The hash covers the source, the parameter and return types (a factory or a
    loop may give one source different annotations) and what the function was
    made with (its closure variables and wp.static() values, identity.py), so
    kernels made by one factory with different captures have different names.
    """
    try:
        src = inspect.getsource(func)
    except (OSError, TypeError):
        src = ""
    made_with = [f"{name}={identity.fingerprint(v)}" for name, v in sorted(staticexpr.closure_of(func).items())]
    if declared is not None:
        made_with += [identity.fingerprint(v) for v in declared.values.values()]
    types = [*signature(func), annotation_key(func, getattr(func, "__annotations__", {}).get("return"))]
    text = "\0".join([module_of(func), func.__qualname__, src, *types, *made_with])
    h = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{c_identifier(func.__name__)}_{h[:8]}"


# The signature() key of a typing.Any parameter: a generic one.
ANY = "any"


def signature(func) -> tuple:
    """func's parameter types as text, one key per parameter (annotation_key).

    What tells the overloads of a @wp.func apart, as Warp's signatures do:
    the parameter types in order, not their names.
    """
    code = func.__code__
    annotations = getattr(func, "__annotations__", {})
    return tuple(annotation_key(func, annotations.get(name))
                 for name in code.co_varnames[:code.co_argcount])


def tuple_typeref(ann):
    """The TypeRef of a ``tuple[...]`` annotation (``tuple[int, float]``, or
    ``tuple[int, ...]``: variadic); None when ann is no subscripted tuple.
    An element that is no value type raises TypeError."""
    if typing.get_origin(ann) is not tuple:
        return None
    args = typing.get_args(ann)
    variadic = len(args) == 2 and args[1] is Ellipsis
    elements = args[:1] if variadic else args
    if not elements or Ellipsis in elements:
        raise TypeError(f"{ann!r}: a tuple annotation names its element types (tuple[int, float] or "
                        f"tuple[int, ...])")
    tr = ir_pb2.TypeRef()
    tr.tuple.variadic = variadic
    for e in elements:
        et = wt.to_typeref(e)
        if et is None or et.WhichOneof("kind") == "array":
            raise TypeError(f"{ann!r}: tuple elements must be scalar, vector, matrix, quaternion, "
                            f"transformation or @wp.struct types, not {e!r}")
        tr.tuple.elements.add().CopyFrom(et)
    return tr


def annotation_key(func, ann) -> str:
    """ANY for typing.Any, the serialized TypeRef of a type, "" when there is no
    annotation; an annotation that cannot be evaluated yet is keyed by its text
    (translation reports it)."""
    if ann is None:
        return ""
    if isinstance(ann, str):
        try:
            ann = eval(ann, staticexpr.namespace(func.__globals__, staticexpr.closure_of(func)))  # noqa: S307
        except Exception:  # noqa: BLE001 - the translator reports it, with file:line
            return "text:" + ann
    if wt.is_generic(ann):
        return ANY
    try:
        tr = tuple_typeref(ann) or wt.to_typeref(ann)
    except TypeError:  # the translator reports it, with file:line
        tr = None
    if tr is not None:
        return tr.SerializeToString(deterministic=True).hex()
    return "other:" + identity.fingerprint(ann)


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
        self.text = src
        tree = ast.parse(src)
        body = tree.body[0].body if indented else tree.body
        defs = [n for n in body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        if not defs:
            raise CompileError(f"{self.file}:{start}:1: error: no function definition found for "
                               f"'{func.__qualname__}'")
        self.node = defs[0]


class Translator:
    """Translates one function. Use ``translate()``."""

    def __init__(self, func, kind, ir_name: str, function_type, declared=None):
        self.func = func
        self.kind = kind
        self.ir_name = ir_name
        self.function_type = function_type  # warpd.function.Function, to recognize user functions
        # The tree parsed at declaration, where the static values found then are keyed.
        self.src = declared.src if declared is not None else SourceFunction(func)
        self.static_values = declared.values if declared is not None else {}
        self.file = self.src.file
        self.closure = staticexpr.closure_of(func)
        self.globals = func.__globals__
        self.locals: set[str] = set()
        self.deps: list = []
        # Compile-time constants among the locals at the statement being translated
        # (name -> Python value; a Function for `f = wp.static(func)`), for wp.static().
        self.consts: dict = {}
        self.function_aliases: set[str] = set()  # locals ever bound to a static function
        self.param_lengths: dict = {}  # parameter (or constructed local) -> len() of its fixed-length type
        # Parameters whose type is known here (never assigned in the body) and locals bound
        # to a type expression: type_exprs.py.
        self.param_types: dict = {}
        self.type_locals: dict = {}
        self.local_types: dict = {}  # locals first made by a value type's constructor: their type
        self.deferred_static = False  # a wp.static() was evaluated now, not at declaration
        self.static_cache: dict = {}  # id(call node) -> its latest static value
        # Statements need the static bookkeeping below only where wp.static may be named.
        self.static_statements = "static" in self.src.text

    # --------------------------------------------------------------- helpers

    def span(self, node) -> ir_pb2.SourceSpan:
        return ir_pb2.SourceSpan(file=self.file, line=self.src.line_base + node.lineno,
                                 col=node.col_offset + 1)

    def error(self, node, msg, category=0):
        """The CompileError for `msg` at `node`; `category` is the Warp error
        class's (a warpd.v1.ErrorCategory number, or TypeError, KeyError, ...)."""
        line = self.src.line_base + getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + 1
        what = "kernel" if self.kind == ir_pb2.FUNCTION_KERNEL else "function"
        return compile_error(msg, category, location=f"{self.file}:{line}:{col}",
                             function=f"{what} '{self.func.__name__}'")

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
        """For ``wp.name`` where warpd has no attribute ``name``: "name" (the daemon may
        have a builtin of that name; Warp looks builtins up on its top module only)."""
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is not _LOCAL and base is not _MISSING and _is_warp_module(base) \
                    and base.__name__ in ("warp", "warpd") and not hasattr(base, node.attr):
                return node.attr
        return None

    def missing_module_attr(self, node):
        """For a callee ``a.b.c`` whose ``a.b`` is a missing attribute of a module ``a``:
        Warp's AttributeError."""
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node)
            node = node.value
        for n in reversed(chain[1:]):  # every attribute but the called one
            base = self.resolve(n.value)
            if isinstance(base, pytypes.ModuleType) and not hasattr(base, n.attr):
                return self.error(n, f"Error, `{n.attr}` is not an attribute of '{self.dotted(n.value)}' "
                                     f"({base.__name__})", AttributeError)
        return None

    def evaluate_annotation(self, ann):
        if isinstance(ann, str):
            ns = dict(self.globals)
            ns.update(self.closure)
            return eval(ann, ns)  # noqa: S307 - the user's own annotation
        return ann

    def is_any(self, ann, node, what) -> bool:
        """Whether an annotation is typing.Any (a generic parameter; as a return type: none given)."""
        try:
            return wt.is_generic(self.evaluate_annotation(ann))
        except Exception as e:
            raise self.error(node, f"cannot evaluate the type annotation of {what}: {e}") from None

    def typeref_of(self, ann, node, what) -> ir_pb2.TypeRef:
        try:
            obj = self.evaluate_annotation(ann)
        except Exception as e:
            raise self.error(node, f"cannot evaluate the type annotation of {what}: {e}") from None
        try:
            tr = tuple_typeref(obj)
        except TypeError as e:
            raise self.error(node, f"unsupported type annotation for {what}: {e}") from None
        if tr is not None:
            if self.kind == ir_pb2.FUNCTION_KERNEL:
                raise self.error(node, f"kernel parameters cannot be tuples ({what}: {obj!r})")
            if tr.tuple.variadic and what == "the return value":
                raise self.error(node, f"a return type cannot be a variadic tuple ({obj!r})")
            return tr
        try:
            tr = wt.to_typeref(obj)
        except TypeError as e:  # e.g. a struct whose definition failed (types/struct.py)
            raise self.error(node, f"unsupported type annotation for {what}: {e}") from None
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
        if args.defaults and self.kind == ir_pb2.FUNCTION_KERNEL:
            raise self.error(args.defaults[0], "kernel parameters cannot have default values")
        params = [a.arg for a in args.args]
        self.locals = set(params)
        assigned = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                self.locals.add(n.id)
                assigned.add(n.id)
        # Statements are followed for the locals bound to functions too (f = my_func).
        self.static_statements = self.static_statements or any(
            isinstance(n, ast.Assign) and self.function_value(n.value) is not _MISSING for n in ast.walk(node))
        fn = ir_pb2.Function(name=self.ir_name, kind=self.kind, span=self.span(node),
                             display_name=node.name)
        annotations = getattr(self.func, "__annotations__", {})
        for a in args.args:
            p = fn.params.add(name=a.arg, span=self.span(a))
            if a.arg in annotations and self.is_any(annotations[a.arg], a, f"parameter '{a.arg}'"):
                if self.kind == ir_pb2.FUNCTION_KERNEL:
                    raise self.error(a, f"kernel parameter '{a.arg}' has a generic annotation; a "
                                        f"generic kernel is instantiated per argument types at launch "
                                        f"or by wp.overload, never translated itself")
                p.type.any.SetInParent()  # generic: the daemon instantiates the function per argument types
            elif a.arg in annotations:
                p.type.CopyFrom(self.typeref_of(annotations[a.arg], a, f"parameter '{a.arg}'"))
                evaluated = self.evaluate_annotation(annotations[a.arg])
                n = staticexpr.fixed_length(evaluated)
                if n is not None:
                    self.param_lengths[a.arg] = n
                t = type_exprs.parameter_type(evaluated)
                if t is not type_exprs.MISSING and a.arg not in assigned:
                    self.param_types[a.arg] = t
        self.constructed_lengths(node, set(params))
        ret = annotations.get("return", None)
        if self.kind == ir_pb2.FUNCTION_KERNEL and ret is not None and ret is not pytypes.NoneType:
            raise self.error(node, KERNEL_RETURN_TEXT, TypeError)
        if ret is not None and self.kind == ir_pb2.FUNCTION_FUNC and not self.is_any(ret, node, "the return value"):
            fn.return_type.CopyFrom(self.typeref_of(ret, node, "the return value"))
            # As Warp names it in its messages: a class by its name (int, int16), else as
            # Python prints it (tuple[int, int]).
            fn.return_annotation = (ret.__name__ if isinstance(ret, type) else str(ret))[:4096]
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
        """IR statements for node; keeps self.consts (the locals' compile-time values) current."""
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and (self.param_types or self.type_locals or self.local_types)):
            t = self.type_expr(node.value)
            if t is not _MISSING and type_exprs.is_type_value(t):
                self.type_locals[node.targets[0].id] = t  # T = type(a): no code, a name for the type
                return []
        if not self.static_statements:
            return self.stmt_ir(node)
        if isinstance(node, ast.If) and self.is_static_call(node.test):
            # As in Warp, only the branch taken is generated (the other one may not
            # even type-check: kernels specialized by a factory), inline.
            taken = node.body if self.static_truth(node.test) else node.orelse
            return self.block(taken)
        if isinstance(node, ast.For):
            unrolled = self.unroll(node)
            if unrolled is not None:
                return unrolled
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            self.check_function_rebinding(node)
        written = staticexpr.written_names(node)
        before = dict(self.consts) if isinstance(node, ast.For) else None
        if isinstance(node, (ast.For, ast.While)):
            self.forget(written)  # a value may differ from one iteration to the next
        out = self.stmt_ir(node)
        self.forget(written)
        values = self.warp_unrolled_range(node, before) if isinstance(node, ast.For) else None
        if values:
            self.consts[node.target.id] = values[-1]
        elif values is not None:  # no iteration: nothing changed
            self.consts.update((n, before[n]) for n in written if n in before)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = self.constant_of(node.value)
            if value is not _MISSING:
                self.consts[node.targets[0].id] = value
                if self.static_kind(value) == "function":
                    self.function_aliases.add(node.targets[0].id)
        return out

    def function_value(self, node):
        """The function an assignment's right side names (``f = my_func``, ``g = f`` with f
        bound to one, ``f = wp.static(...)``); _MISSING for anything else."""
        if self.is_static_call(node):
            value = self.static_cache.get(id(node), _MISSING)
        elif isinstance(node, ast.Call) and self.is_grad_call(node):
            value = self.grad_of(node)  # g = wp.grad(f): g names f's gradient from here on
        elif isinstance(node, ast.Name) and node.id in self.locals:
            value = self.consts.get(node.id, _MISSING)
        elif isinstance(node, (ast.Name, ast.Attribute)):
            value = self.resolve(node)
            if value is _LOCAL:
                return _MISSING
        else:
            return _MISSING
        return value if self.static_kind(value) == "function" else _MISSING

    def check_function_rebinding(self, node):
        """Warp's error for assigning a local bound to a function anything but that function:
        Warp has no function pointers."""
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for t in targets:
            names = [t] if isinstance(t, ast.Name) else \
                [e for e in getattr(t, "elts", []) if isinstance(e, ast.Name)]
            for n in names:
                bound = self.consts.get(n.id, _MISSING)
                if n.id not in self.function_aliases or self.static_kind(bound) != "function":
                    continue
                new = self.function_value(node.value) if isinstance(node, ast.Assign) and t is n \
                    else _MISSING
                if isinstance(bound, GradWrapper) or isinstance(new, GradWrapper):
                    # Warp 1.19: a wp.grad() local may be bound to another function handle only.
                    if new is _MISSING and isinstance(bound, GradWrapper):
                        raise self.error(node, f"Cannot reassign local '{n.id}' after binding it to "
                                               f"wp.grad(...). Warp treats wp.grad(...) results as static "
                                               f"function handles; use a different local variable for the "
                                               f"new value.")
                    if new is not _MISSING:
                        continue
                if new is _MISSING:
                    raise self.error(node, f"Error, rebinding function-valued local '{n.id}' to a "
                                           f"non-function value is not supported. Warp does not have "
                                           f"function pointers, so a local bound to a function must refer "
                                           f"to a function throughout the kernel.")
                if new is not bound:
                    raise self.error(node, f"Error, rebinding function-valued local '{n.id}' to a "
                                           f"different function is not supported. Warp does not have "
                                           f"function pointers, so a local bound to a function must refer "
                                           f"to the same function throughout the kernel.")

    def forget(self, names):
        for n in names:
            self.consts.pop(n, None)

    def stmt_ir(self, node) -> list:
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
            user = self.operator_function(_OPERATOR_NAMES.get(type(node.op)))
            if user and isinstance(node.target, ast.Name):
                # x += y with a user 'add' in scope: x = x + y, which may call it
                read = ast.copy_location(ast.Name(id=node.target.id, ctx=ast.Load()), node.target)
                s = ir_pb2.Stmt(span=span)
                s.assign.target.CopyFrom(self.target(node.target))
                s.assign.value.CopyFrom(self.expr(ast.copy_location(
                    ast.BinOp(left=read, op=node.op, right=node.value), node)))
                return [s]
            s = ir_pb2.Stmt(span=span)
            s.aug_assign.target.CopyFrom(self.target(node.target))
            s.aug_assign.user_function = user  # a member or component: the daemon decides (Warp's rules)
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
            before = dict(self.consts)
            s.if_stmt.body.extend(self.block(node.body))
            self.consts = before  # the else branch starts from the constants before the if
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
            if node.value is not None and self.kind == ir_pb2.FUNCTION_KERNEL:
                # `return None` too (Warp: still a value-returning statement).
                raise self.error(node, KERNEL_RETURN_TEXT, TypeError)
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
        if len(node.targets) == 1 and isinstance(first, ast.Name) and not self.is_static_call(node.value) \
                and self.function_value(node.value) is not _MISSING:
            return []  # `f = func`: f names the function from here on (see stmt)
        if len(node.targets) == 1 and isinstance(first, ast.Name) and self.is_static_call(node.value):
            value = self.static_value(node.value)
            if self.static_kind(value) == "function":
                return []  # `f = wp.static(func)`: f names the function from here on (see stmt)
            s = ir_pb2.Stmt(span=span)
            s.assign.target.CopyFrom(self.target(first))
            s.assign.value.span.CopyFrom(self.span(node.value))
            self.static_expr(s.assign.value, node.value, value)
            return [s]
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
        return [self.slice(it) if isinstance(it, ast.Slice) else self.expr(it) for it in items]

    def slice(self, node) -> ir_pb2.Expr:
        """``a:b:c`` as an index: the daemon's slice(start=a, stop=b, step=c), the parts given."""
        e = ir_pb2.Expr(span=self.span(node))
        e.call.kind = ir_pb2.CALLEE_BUILTIN
        e.call.callee = "slice"
        for name, part in (("start", node.lower), ("stop", node.upper), ("step", node.step)):
            if part is not None:
                k = e.call.keywords.add(name=name)
                k.value.CopyFrom(self.expr(part))
        return e

    def expr(self, node) -> ir_pb2.Expr:
        e = ir_pb2.Expr(span=self.span(node))
        if (self.param_types or self.type_locals or self.local_types) and isinstance(node, (ast.Name, ast.Attribute, ast.Call)):
            t = self.type_expr(node)
            if t is not _MISSING:
                if not self.value(e, t):
                    raise self.error(node, f"{self.source_of(node)} is {_short_repr(t)}, which has no "
                                           f"value in a kernel (types are values only as dtype= "
                                           f"arguments or called as constructors)")
                return e
        if isinstance(node, ast.Name):
            if node.id in self.locals:
                if self.static_kind(self.consts.get(node.id)) == "function":
                    raise self.error(node, f"'{node.id}' is a function (bound by wp.static()); it "
                                           f"can only be called")
                e.name.id = node.id
                return e
            obj = self.lookup(node.id)
            if obj is _MISSING or not self.value(e, obj):
                if getattr(obj, "_wp_array_", False) or getattr(obj, "_wp_indexed_", False):
                    # Warp's TypeError: an array is no constant; kernels take arrays as arguments.
                    raise self.error(node, f"Invalid external reference type: {type(obj)} ('{node.id}' is "
                                           f"an array: pass it to the kernel as an argument)", TypeError)
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
            e.binary.user_function = self.operator_function(_OPERATOR_NAMES.get(type(node.op)))
            e.binary.op = op
            e.binary.left.CopyFrom(self.expr(node.left))
            e.binary.right.CopyFrom(self.expr(node.right))
            return e
        if isinstance(node, ast.UnaryOp):
            e.unary.user_function = self.operator_function(_OPERATOR_NAMES.get(type(node.op)))
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
            if self.is_static_call(node):
                local = self.static_len_of_local(node)
                if local is not None:
                    # wp.static(len(t)) of a local whose value is known only when the kernel
                    # runs (a tuple, a vector, a builtin's result): its length is part of its
                    # type, which the daemon knows; its len() is that constant.
                    e.call.kind = ir_pb2.CALLEE_BUILTIN
                    e.call.callee = "len"
                    e.call.args.append(self.expr(local))
                    return e
                self.static_expr(e, node, self.static_value(node))
            else:
                self.call(e, node)
            return e
        if isinstance(node, ast.Subscript):
            e.subscript.value.CopyFrom(self.expr(node.value))
            e.subscript.indices.extend(self.indices(node))
            return e
        if isinstance(node, ast.IfExp):
            if self.is_static_call(node.test):
                return self.expr(node.body if self.static_truth(node.test) else node.orelse)
            e.if_exp.test.CopyFrom(self.expr(node.test))
            e.if_exp.body.CopyFrom(self.expr(node.body))
            e.if_exp.orelse.CopyFrom(self.expr(node.orelse))
            return e
        if isinstance(node, ast.Tuple):
            e.tuple.SetInParent()
            e.tuple.elements.extend(self.expr(x) for x in node.elts)
            return e
        if isinstance(node, ast.List):
            raise self.error(node, "List constructs are not supported in kernels. Use vectors like `wp.vec3()` "
                                   "for small fixed-size collections, or `wp.zeros(shape=N, dtype=...)` for "
                                   "stack-allocated arrays.")
        if isinstance(node, (ast.Dict, ast.Set)):
            raise self.error(node, f"Construct `ast.{type(node).__name__}` not supported in kernels.")
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
            if id(node) not in self.print_string_args():
                raise self.error(node, "string constants are supported only as arguments of print() and "
                                       "wp.printf()")
            self.string(e, v, node)
        else:
            raise self.error(node, f"the constant {v!r} is not supported in warpd kernels and functions")

    def print_string_args(self) -> set:
        """ids of the nodes that may be strings: the string constants and wp.static() calls
        that are arguments of print() and wp.printf() (the daemon checks this too)."""
        allowed = self.__dict__.get("_print_string_args")
        if allowed is None:
            allowed = set()
            for call in ast.walk(self.src.node):
                if not (isinstance(call, ast.Call) and isinstance(call.func, (ast.Name, ast.Attribute))):
                    continue
                obj = self.resolve(call.func)
                name = builtin_name(obj) if obj is not _LOCAL and obj is not _MISSING else None
                if (name or self.unresolved_warp_attr(call.func)) in ("print", "printf"):
                    allowed.update(id(a) for a in call.args
                                   if isinstance(a, ast.Constant) or self.is_static_call(a))
            self._print_string_args = allowed
        return allowed

    def string(self, e, v, node):
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise self.error(node, "string constants must be valid Unicode text") from None
        e.constant.string_value = v

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
            # A struct value (e.g. wp.static(make_struct(...))): its constructor with
            # each member a constant, by name; an array member cannot be one.
            from .types.struct import ArrayMember

            t = type(obj)
            t._wp_fill_ctor_(e.call, e.span)
            for name, mt, _ in t._wp_members_:
                v = getattr(obj, name)
                if v is None and issubclass(mt, ArrayMember):
                    continue  # an empty array member: the zero the constructor gives
                if issubclass(mt, ArrayMember):
                    raise CompileError(f"{e.span.file}:{e.span.line}:{e.span.col}: error: the struct "
                                       f"value {t.__name__}(...) holds an array (member '{name}') and "
                                       f"cannot be used as a kernel constant; pass it as a kernel argument")
                k = e.call.keywords.add(name=name)
                k.value.span.CopyFrom(e.span)
                if not self.value(k.value, mt(v) if isinstance(mt, type) and issubclass(mt, wt._Scalar)
                                  and not isinstance(v, wt._Scalar) else v):
                    return False
            return True
        if isinstance(obj, type):
            tr = wt.to_typeref(obj)
            if tr is not None:
                e.type_value.CopyFrom(tr)
                return True
        return False

    def call(self, e, node):
        call = e.call
        f = node.func
        # type(a)(x), T(x), type(a).dtype(x) with types known here (type_exprs.py); else the
        # daemon's construct_like for type(x)(...) and a.dtype(...) of other values.
        known_type = (self.type_expr(f) if (self.param_types or self.type_locals or self.local_types)
                      and isinstance(f, (ast.Name, ast.Attribute, ast.Call)) else _MISSING)
        if not type_exprs.is_type_value(known_type):
            known_type = _MISSING
        like = self.constructor_like(f) if known_type is _MISSING else None
        if like is not None:  # type(x)(args), a.dtype(args): the daemon's construct_like
            exemplar, element = like
            call.kind = ir_pb2.CALLEE_BUILTIN
            call.callee = "construct_like"
            call.args.append(self.expr(exemplar))
            for a in node.args:
                if isinstance(a, ast.Starred):
                    raise self.error(a, "'*' arguments are not supported here")
                call.args.append(self.expr(a))
            if element:
                k = call.keywords.add(name="element")
                k.value.span.CopyFrom(self.span(f))
                k.value.constant.bool_value = True
            if node.keywords:
                raise self.error(node, "type(x)(...) takes positional arguments only")
            return
        if isinstance(f, ast.Call) and self.is_grad_call(f):
            obj = self.grad_of(f)  # wp.grad(func)(args)
        elif self.is_static_call(f):
            obj = self.static_value(f)
            if self.static_kind(obj) != "function":
                raise self.error(node, f"wp.static({self.source_of(staticexpr.argument(f))}) is called, "
                                       f"but it gives {_short_repr(obj)}, not a function")
        elif isinstance(f, ast.Name) and f.id in self.locals and f.id in self.function_aliases:
            obj = self.consts.get(f.id, _MISSING)
            if self.static_kind(obj) != "function":
                raise self.error(node, f"'{f.id}' names a function (bound by wp.static()) only on some "
                                       f"paths to this call; bind it once, before any branch or loop")
        elif known_type is not _MISSING:
            obj = known_type
        elif isinstance(f, (ast.Name, ast.Attribute)):
            obj = self.resolve(f)
        else:
            # g(x)(...): Warp evaluates g(x) first, so an undefined g is its KeyError.
            inner = f.func if isinstance(f, ast.Call) else None
            if isinstance(inner, ast.Name) and inner.id not in self.locals and self.lookup(inner.id) is _MISSING:
                raise self.error(inner, f"Referencing undefined symbol: {inner.id}", KeyError)
            raise self.error(node, "only calls of named functions are supported")
        if isinstance(obj, GradWrapper):
            call.grad = True  # the gradient of the function called (ir.proto Call.grad)
            obj = obj.func
        elif obj is _grad:
            raise self.error(node, "wp.grad(f) is a function handle: call it, as in wp.grad(f)(x)")
        if getattr(obj, "_wp_native_snippet_", False):
            raise self.error(node, f"'{obj.key}' is a wp.func_native snippet: warpd never compiles "
                                   f"C++/CUDA text sent by a client (it runs kernels of many users); "
                                   f"write the function in Warp's language with @wp.func")
        if isinstance(obj, staticexpr.Builtin):
            call.kind = ir_pb2.CALLEE_BUILTIN
            call.callee = obj.name
        elif isinstance(obj, self.function_type):
            call.kind = ir_pb2.CALLEE_FUNCTION
            call.callee = obj.ir_name
            if obj not in self.deps:
                self.deps.append(obj)
            self.function_args(call, obj, node)
            return
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
                if obj is _MISSING and (missing := self.missing_module_attr(f)) is not None:
                    raise missing
                name = self.unresolved_warp_attr(f) or self.dotted(f)
                written = self.dotted(f)
                if written and written != name:
                    call.written = written
            call.callee = name
        for a in node.args:
            if isinstance(a, ast.Starred):  # *v: the daemon's unpack(v), spread into the arguments
                u = call.args.add(span=self.span(a))
                u.call.kind = ir_pb2.CALLEE_BUILTIN
                u.call.callee = "unpack"
                u.call.args.append(self.expr(a.value))
                continue
            call.args.append(self.expr(a))
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw.value, "'**' arguments are not supported")
            k = call.keywords.add(name=kw.arg)
            k.value.CopyFrom(self.expr(kw.value))

    def constructor_like(self, f):
        """(exemplar node, element?) when `f` is ``type(x)`` or ``a.dtype`` of a local ``a``
        (Warp's generic constructors), else None."""
        if (isinstance(f, ast.Call) and isinstance(f.func, ast.Name) and f.func.id == "type"
                and f.func.id not in self.locals and self.lookup("type") is builtins.type
                and len(f.args) == 1 and not f.keywords):
            return f.args[0], False
        if isinstance(f, ast.Attribute) and f.attr == "dtype" and self.resolve(f.value) is _LOCAL:
            return f.value, True
        return None

    def operator_function(self, name) -> str:
        """The IR name of the user function `name` (an operator's builtin name: add, mul, neg,
        ...) when one is in the kernel's scope, else "". The daemon calls it for the operator
        when one of its overloads takes the operands' types, as Warp overloads operators."""
        if name is None or name in self.locals:
            return ""
        obj = self.lookup(name)
        if not isinstance(obj, self.function_type):
            return ""
        if obj not in self.deps:
            self.deps.append(obj)
        return obj.ir_name

    def function_args(self, call, fn, node):
        """A user function's arguments in parameter order, as Python binds them: keywords
        matched by name, omitted ones taken from the defaults (inlined as constants).
        Overloads that bind the call must agree on the order and the defaults."""
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.error(a, "'*' arguments are not supported")
        keywords = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise self.error(kw.value, "'**' arguments are not supported")
            keywords[kw.arg] = kw.value
        signatures = [inspect.signature(f) for f in fn.overloads]
        if not keywords and any(len(s.parameters) == len(node.args) for s in signatures):
            for a in node.args:  # the daemon picks among the overloads by type
                call.args.append(self.expr(a))
            return
        bound, why = [], None
        for s in signatures:
            try:
                b = s.bind(*node.args, **keywords)
            except TypeError as err:
                why = why or str(err)
                continue
            b.apply_defaults()
            bound.append(list(b.arguments.values()))
        if not bound and not keywords:  # the daemon lists the overloads none of which fits
            for a in node.args:
                call.args.append(self.expr(a))
            return
        if not bound:
            raise self.error(node, f"'{fn.key}' cannot be called with these arguments: {why}")
        given = {id(a) for a in [*node.args, *keywords.values()]}

        def shape(items):
            return [("arg", id(v)) if id(v) in given else ("default", repr(v)) for v in items]

        if any(shape(b) != shape(bound[0]) for b in bound[1:]):
            raise self.error(node, f"the overloads of '{fn.key}' bind these keyword arguments or "
                                   f"defaults differently; pass every argument by position")
        for v in bound[0]:
            if id(v) in given:
                call.args.append(self.expr(v))
                continue
            e = ir_pb2.Expr(span=self.span(node))
            if not self.value(e, v):
                raise self.error(node, f"the default value {_short_repr(v)} of a parameter of "
                                       f"'{fn.key}' is not a constant a kernel can hold")
            call.args.append(e)

    # ------------------------------------------------------------ wp.static

    def is_grad_call(self, node) -> bool:
        """Whether node is a call ``wp.grad(...)``."""
        return isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Attribute)) \
            and self.resolve(node.func) is _grad

    def grad_of(self, node) -> GradWrapper:
        """The GradWrapper ``wp.grad(f)`` (node) gives, with Warp's errors for anything but one
        Warp function: a @wp.func, a builtin, a local bound to one, or a wp.static() of one."""
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            raise self.error(node, "grad() expects exactly one function argument")
        arg = node.args[0]
        if self.is_static_call(arg):
            target = self.static_value(arg)
        elif isinstance(arg, ast.Name) and arg.id in self.locals:
            target = self.consts.get(arg.id, _MISSING)
            if target is _MISSING:
                raise self.error(arg, f"grad() expects a Warp function, got the local variable '{arg.id}'")
        elif isinstance(arg, (ast.Name, ast.Attribute)):
            target = self.resolve(arg)
            if target is _MISSING:
                name = self.unresolved_warp_attr(arg)
                if name is None:
                    raise self.error(arg, f"Referencing undefined symbol: {self.dotted(arg)}", KeyError)
                target = staticexpr.Builtin(name)  # a builtin warpd has no Python object for
        else:
            raise self.error(arg, f"grad() expects a Warp function, got the expression "
                                  f"'{self.source_of(arg)}'")
        if isinstance(target, type) and builtin_name(target) is not None:
            target = staticexpr.Builtin(builtin_name(target))  # float, wp.vec3, ...: constructors
        if not (isinstance(target, self.function_type) or _is_function(target)):
            raise self.error(arg, f"grad() expects a Warp function, got {type(target).__name__}")
        return GradWrapper(target)

    def is_static_call(self, node) -> bool:
        # A call resolved as wp.static() at declaration stays one if its name is rebound since.
        return isinstance(node, ast.Call) and (id(node) in self.static_values or (
            isinstance(node.func, (ast.Name, ast.Attribute)) and self.resolve(node.func) is staticexpr.static))

    def static_len_of_local(self, node):
        """For ``wp.static(len(x))`` whose x is a local without a compile-time value (a
        parameter of fixed length aside), the Name node x; else None."""
        if id(node) in self.static_values:
            return None
        try:
            arg = staticexpr.argument(node)
        except staticexpr.StaticError:
            return None
        if not (isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name) and arg.func.id == "len"
                and arg.func.id not in self.locals and self.lookup("len") is builtins.len
                and len(arg.args) == 1 and not arg.keywords and isinstance(arg.args[0], ast.Name)):
            return None
        x = arg.args[0].id
        if x not in self.locals or x in self.consts or x in self.param_lengths:
            return None
        return arg.args[0]

    def source_of(self, node) -> str:
        text = ast.get_source_segment(self.src.text, node) or ast.unparse(node)
        return " ".join(text.split())

    def static_value(self, node):
        """The value of the wp.static() call node: found at declaration, else evaluated now."""
        if id(node) in self.static_values:
            value = self.static_values[id(node)]
        else:
            try:
                arg = staticexpr.argument(node)
            except staticexpr.StaticError as err:
                raise self.error(node, str(err)) from None
            name = self.unresolved_warp_attr(arg)
            if name is not None:
                value = staticexpr.Builtin(name)  # wp.sin: a builtin warpd has no Python object for
            else:
                value = self.evaluate_static(node, arg)
        self.static_cache[id(node)] = value  # for constant_of, right after the statement
        return value

    def evaluate_static(self, node, arg):
        self.deferred_static = True
        ns = staticexpr.namespace(self.globals, self.closure, self.consts)
        expr = staticexpr.substitute_len(arg, self.param_lengths)
        what = f"wp.static({self.source_of(arg)})"
        try:
            value = staticexpr.evaluate(expr, self.file, ns)
        except staticexpr.StaticError as err:
            # Warp 1.19's wording first ("Error evaluating static expression: <message>").
            kind, _, message = str(err).partition(": ")
            msg = f"Error evaluating static expression: {message or kind}"
            unknown = sorted(staticexpr.names_in(arg) & self.locals - self.consts.keys())
            if kind == "NameError":
                msg += ". Make sure all variables used in the static expression are constant."
            msg += f" ({what} raised {kind})"
            if unknown:
                msg += (f" ({', '.join(repr(n) for n in unknown)}: a local variable whose value is not "
                        f"known before the kernel runs; wp.static() sees globals, closure variables and "
                        f"locals assigned a literal or a static value, and the index of a for loop over "
                        f"range() with constant bounds)")
            raise self.error(node, msg) from None
        try:
            staticexpr.check(value, self.function_type)
        except staticexpr.StaticError as err:
            raise self.error(node, f"Static expression returns an unsupported value: {err} ({what})") from None
        return value

    def static_kind(self, value) -> str | None:
        """"constant", "string" or "function" for a static value; None for anything else."""
        if value is None or value is _MISSING:
            return None
        try:
            return staticexpr.check(value, self.function_type)
        except staticexpr.StaticError:
            return None

    def static_truth(self, node) -> bool:
        """The truth of ``if wp.static(...)``: a number or bool."""
        value = self.static_value(node)
        if not staticexpr.is_number(value):
            raise self.error(node, f"wp.static({self.source_of(staticexpr.argument(node))}) used as a "
                                   f"condition gives {_short_repr(value)}; expected a bool or a number")
        return staticexpr.truth(value)

    def static_expr(self, e, node, value):
        """Fills e with a static value used as an expression."""
        what = f"wp.static({self.source_of(staticexpr.argument(node))})"
        kind = self.static_kind(value)
        if kind == "string":
            if id(node) not in self.print_string_args():
                raise self.error(node, f"{what} gives a string; strings are supported only as "
                                       f"arguments of print() and wp.printf()")
            self.string(e, value, node)
        elif kind == "function":
            raise self.error(node, f"{what} gives the function {_short_repr(value)}; a function can "
                                   f"only be called: {what}(...)")
        elif not self.value(e, value):
            raise self.error(node, f"{what} gives {_short_repr(value)}, which does not fit in 64 bits")

    def constructed_lengths(self, fn, params: set):
        """len() of locals first assigned a constructor of a fixed-length type (``v = wp.vec3()``),
        for wp.static(len(v) + ...): a local's type never changes in a kernel (Warp 1.19's
        test_static_len_query)."""
        first: dict = {}
        for n in ast.walk(fn):
            if (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                    and n.targets[0].id not in params and n.targets[0].id not in first):
                first[n.targets[0].id] = n.value
        for name, value in first.items():
            if isinstance(value, ast.Call) and isinstance(value.func, (ast.Name, ast.Attribute)):
                t = self.resolve(value.func)
                if isinstance(t, type) and wt.is_value_type(t):
                    self.local_types.setdefault(name, wt.canonical_dtype(t))  # for v.dtype (type_expr)
                    n = staticexpr.fixed_length(t)
                    if n is not None:
                        self.param_lengths.setdefault(name, n)

    def type_expr(self, node):
        """The value of a type expression whose types are known here (type_exprs.py): a type,
        an array annotation or a number (``T.length``); _MISSING for any other expression."""
        if isinstance(node, ast.Name):
            return self.type_locals.get(node.id, _MISSING)
        if isinstance(node, ast.Attribute):
            base = self.type_expr(node.value)
            if base is _MISSING and isinstance(node.value, ast.Name) and node.attr == "dtype":
                t = self.param_types.get(node.value.id, _MISSING)  # a.dtype of an array parameter
                if t is not _MISSING and getattr(t, "_wp_array_", False):
                    return t.dtype
                t = self.local_types.get(node.value.id, _MISSING)  # v.dtype of v = wp.vec3(...)
                return type_exprs.attribute(t, "dtype") if t is not _MISSING else _MISSING
            if base is _MISSING or not type_exprs.is_type_value(base):
                return _MISSING
            value = type_exprs.attribute(base, node.attr)
            if value is type_exprs.MISSING:
                raise self.error(node, f"`{node.attr}` is not an attribute of '{base!r}'", AttributeError)
            return value
        if not isinstance(node, ast.Call):
            return _MISSING
        f = node.func
        if (isinstance(f, ast.Name) and f.id == "type" and f.id not in self.locals
                and self.lookup("type") is builtins.type and len(node.args) == 1 and not node.keywords
                and isinstance(node.args[0], ast.Name)):
            return self.param_types.get(node.args[0].id, _MISSING)  # type(a) of a parameter
        # wp.types.vector(length=2, dtype=type(a)): a type factory given a type known here.
        if not (isinstance(f, ast.Attribute) and self.resolve(f.value) is wt
                and self.resolve(f) in type_exprs.FACTORIES):
            return _MISSING
        known = []

        def arg(a):
            v = self.type_expr(a)
            if v is not _MISSING:
                known.append(v)
                return v
            return self.known_value(a)

        args = [arg(a) for a in node.args]
        kwargs = {k.arg: arg(k.value) for k in node.keywords if k.arg is not None}
        if not known or _MISSING in args or _MISSING in kwargs.values() or len(kwargs) != len(node.keywords):
            return _MISSING
        try:
            return self.resolve(f)(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - the user's arguments: reported with file:line
            raise self.error(node, f"{self.source_of(node)} raised {type(err).__name__}: {err}") from None

    def constant_of(self, node):
        """The compile-time value of an assignment's right side, as Warp 1.19 tracks it; _MISSING
        if none: a literal number, a constant reached by attribute (``Color.RED``) or a
        wp.static() value (just evaluated). A name is copied (``m = n`` is not constant, in
        Warp too), and anything computed (``int(3)``, ``-1``, ``a + b``) is not constant.
        """
        if isinstance(node, ast.Constant):
            return node.value if staticexpr.is_number(node.value) else _MISSING
        if self.is_static_call(node):
            return self.static_cache.get(id(node), _MISSING)
        function = self.function_value(node)  # f = func: f names func (Warp 1.19 too)
        if function is not _MISSING:
            return function
        if isinstance(node, ast.Attribute):
            obj = self.resolve(node)
            if obj is not _LOCAL and obj is not _MISSING and staticexpr.is_constant(obj):
                return obj
        return _MISSING

    def known_value(self, node):
        """The compile-time value of an expression read here; _MISSING if it has none:
        a literal, a wp.static() value, a local constant or a constant global."""
        if self.is_static_call(node):
            return self.static_value(node)
        if isinstance(node, ast.Constant):
            return node.value if staticexpr.is_number(node.value) else _MISSING
        if isinstance(node, ast.Name) and node.id in self.locals:
            return self.consts.get(node.id, _MISSING)
        if isinstance(node, (ast.Name, ast.Attribute)):
            obj = self.resolve(node)
            if obj is not _LOCAL and obj is not _MISSING and staticexpr.is_constant(obj):
                return obj
        return _MISSING

    def range_bound(self, a, consts: dict, evaluated: bool = False):
        """The integer value of a range() argument known before the loop, else _MISSING:
        a literal (negated too, as in Warp), a constant global or local (consts), a
        wp.static() (evaluated: only if evaluated already, with the loop)."""
        if isinstance(a, ast.UnaryOp) and isinstance(a.op, ast.USub) and isinstance(a.operand, ast.Constant):
            v = a.operand.value
            v = -v if isinstance(v, int) and not isinstance(v, bool) else _MISSING
        elif evaluated and self.is_static_call(a):
            v = self.static_cache.get(id(a), _MISSING)
        elif isinstance(a, ast.Name) and a.id in self.locals:
            v = consts.get(a.id, _MISSING)
        else:
            v = self.known_value(a)
        if isinstance(v, wt._Scalar):
            v = v.value
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Integral, np.integer)):
            return _MISSING
        return int(v)

    def warp_unrolled_range(self, node, before: dict):
        """The range of a for loop that Warp 1.19 unrolls though warpd keeps it a loop; else None.

        Warp unrolls a loop over range() with constant bounds when it has at
        most max_unroll iterations (any number with a wp.static() in it) and no
        break of its own; the index is then a constant in each copy and keeps
        the last one after the loop, where wp.static() sees it; an empty range
        changes nothing. warpd copies only loops that use their index in
        wp.static() (unroll()), but knows the index after the others the same
        way. before: the locals' compile-time values before the loop. warpd
        takes Warp's default max_unroll (16), whatever the module's option.
        """
        target = node.target
        it = node.iter
        if not isinstance(target, ast.Name) or node.orelse \
                or not (isinstance(it, ast.Call) and isinstance(it.func, (ast.Name, ast.Attribute))
                        and self.resolve(it.func) is builtins.range and not it.keywords and 1 <= len(it.args) <= 3):
            return None
        if any(target.id in staticexpr.written_names(stmt) for stmt in node.body) \
                or staticexpr.loop_breaks(node.body):
            return None  # the index is changed in the body, or the loop may stop early
        bounds = [self.range_bound(a, before, evaluated=True) for a in it.args]
        if _MISSING in bounds:
            return None
        try:
            values = range(*bounds)
        except ValueError:
            return None
        has_static = any(self.is_static_call(n) for n in ast.walk(node))
        return None if len(values) > _WARP_MAX_UNROLL and not has_static else values

    def unroll(self, node) -> list | None:
        """A for loop whose body uses its index in wp.static(), unrolled; None for other loops.

        The loop must run over range() with constant bounds (literals, constant
        globals or locals, wp.static()). Each copy of the body is preceded by
        ``i = <value>`` and sees i as a compile-time constant, as in Warp; after
        the loop i keeps its last value, as in Python.
        """
        target = node.target
        if not isinstance(target, ast.Name) or node.orelse:
            return None
        uses_index = any(self.is_static_call(n) and target.id in staticexpr.names_in(n)
                         for stmt in node.body for n in ast.walk(stmt))
        it = node.iter
        if not uses_index or not (isinstance(it, ast.Call) and isinstance(it.func, (ast.Name, ast.Attribute))
                                  and self.resolve(it.func) is builtins.range
                                  and not it.keywords and 1 <= len(it.args) <= 3):
            return None
        bounds = [self.range_bound(a, self.consts) for a in it.args]
        if _MISSING in bounds:
            return None  # not a constant range: the loop stays, and wp.static(i) fails
        try:
            values = range(*bounds)
        except ValueError as err:
            raise self.error(it, f"range(): {err}") from None
        if len(values) > _MAX_UNROLL:
            raise self.error(node, f"this loop uses its index in wp.static(), so it is unrolled, but it "
                                   f"has {len(values)} iterations (at most {_MAX_UNROLL})")
        for stmt in node.body:
            jump = staticexpr.loop_jump(stmt)
            if jump is not None:
                raise self.error(jump, f"'{'break' if isinstance(jump, ast.Break) else 'continue'}' is not "
                                       f"supported in a loop unrolled for wp.static() (one that uses its "
                                       f"index in wp.static())")
        out = []
        for v in values:
            s = ir_pb2.Stmt(span=self.span(target))
            s.assign.target.CopyFrom(self.target(target))
            s.assign.value.span.CopyFrom(self.span(target))
            self.value(s.assign.value, v)
            out.append(s)
            self.consts[target.id] = v
            out.extend(self.block(node.body))
        return out


def _short_repr(value) -> str:
    if isinstance(value, staticexpr.Builtin):
        return f"wp.{value.name}"
    if hasattr(value, "func") and hasattr(value, "ir_name"):
        return f"'{value.func.__qualname__}'"
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{text} ({type(value).__name__})"


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


def declare(func):
    """What translation needs from the time func is decorated: its wp.static() values.

    None when func uses no wp.static(). See staticexpr.py.
    """
    return staticexpr.declare(func, SourceFunction)


def translate(func, kind, ir_name: str, function_type, declared=None):
    """(ir_pb2.Function, [user Function objects it calls], again) for a Python function.

    ``again``: some wp.static() was evaluated now rather than at declaration, so
    the function must be translated again whenever its module is rebuilt.
    """
    t = Translator(func, kind, ir_name, function_type, declared)
    fn = t.translate()
    return fn, t.deps, t.deferred_static
