"""``wp.static(expr)``: Python expressions evaluated before a kernel reaches the daemon.

The daemon never sees ``wp.static``; the front end replaces each call by the
value of its expression, with Warp 1.19's rules (Warp's code generation guide,
"Static Expressions"):

- When ``@wp.kernel``/``@wp.func`` is applied, each ``wp.static(expr)`` whose
  expression names no enclosing ``for`` variable is evaluated in the
  function's globals and closure (closure first), and the value is kept:
  changing a global afterwards does not change the kernel, as in Warp. A
  local that shadows a global does not hide it here (Warp's behaviour too).
- Expressions that name a loop variable, or that failed then (a name defined
  later, a local constant), are evaluated when the function is translated,
  with the function's compile-time constants added to the namespace: locals
  last assigned a literal, a constant global or a static value, and the index
  of a loop the front end unrolls (see frontend.py). ``len(p)`` of a parameter
  annotated with a vector, matrix, quaternion or transformation type is its
  length. A function with such expressions is translated again each time its
  module is rebuilt, so they see the globals of that time, as in Warp.
- The value must be a number or bool (numpy and Warp scalars, IntEnum), a
  vector, matrix, quaternion or transformation value, a string (warpd: only as
  an argument of print()/wp.printf()) or a Warp function to call (a @wp.func,
  or a builtin such as ``wp.sin``). None, arrays, structs, types, tuples,
  lists and other objects are errors, as in Warp 1.19.

The value is inlined into the IR, so it is part of the module's content hash:
a different value is a different module, compiled anew.
"""

from __future__ import annotations

import ast
import builtins
import copy
import enum
import numbers

import numpy as np

from . import types as wt


def static(expr):
    """Evaluates ``expr`` when the kernel is declared and puts its value in its place.

    In Python scope (outside kernels) it returns ``expr``.
    """
    return expr


class Builtin:
    """A kernel builtin named by a static expression (``wp.static(wp.sin)``)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"<warpd builtin {self.name}>"


class StaticError(Exception):
    """A static expression that cannot be used; the message names the reason, not the place."""


def argument(call: ast.Call) -> ast.expr:
    """The expression of ``wp.static(expr)`` (or ``wp.static(expr=...)``)."""
    if len(call.args) == 1 and not call.keywords:
        arg = call.args[0]
    elif not call.args and len(call.keywords) == 1 and call.keywords[0].arg == "expr":
        arg = call.keywords[0].value
    else:
        raise StaticError("wp.static() takes exactly one expression")
    if isinstance(arg, ast.Starred):
        raise StaticError("wp.static() takes exactly one expression")
    return arg


def names_in(node) -> set:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def namespace(globals_: dict, closure: dict, constants: dict | None = None) -> dict:
    """The namespace a static expression is evaluated in (later dicts win)."""
    ns = dict(globals_)
    ns.update(closure)
    if constants:
        ns.update(constants)
    return ns


def closure_of(func) -> dict:
    """func's closure variables that are bound now."""
    out = {}
    if func.__closure__:
        for name, cell in zip(func.__code__.co_freevars, func.__closure__):
            try:
                out[name] = cell.cell_contents
            except ValueError:  # not assigned yet
                pass
    return out


def evaluate(expr: ast.expr, file: str, ns: dict):
    """The value of expr in ns; StaticError("<Exception>: <message>") if it raises."""
    code = compile(ast.fix_missing_locations(ast.Expression(expr)), file, "eval")
    try:
        value = eval(code, ns)  # noqa: S307 - the user's own expression, as in Warp
    except Exception as e:  # noqa: BLE001 - any failure of user code is reported
        raise StaticError(f"{type(e).__name__}: {e}") from None
    if isinstance(value, (enum.IntEnum, enum.IntFlag)):
        value = int(value)
    return value


def is_number(v) -> bool:
    """A value the IR holds as a scalar constant."""
    return isinstance(v, (bool, np.bool_, wt._Scalar, np.integer, np.floating)) or (
        isinstance(v, numbers.Real))


def is_constant(v) -> bool:
    """A value the IR holds as a constant: a scalar or a vector/matrix/quat/transform."""
    return is_number(v) or (isinstance(v, wt.Value) and type(v)._wp_scalar_type_ is not None)


def truth(v) -> bool:
    """Python's truth of a scalar value (the test of ``if wp.static(...)``)."""
    if isinstance(v, wt._Scalar):
        return bool(v.value)
    return bool(v)


def check(value, function_type) -> str:
    """The kind of a static value: "constant", "string" or "function"; StaticError otherwise."""
    if is_constant(value):
        return "constant"
    if isinstance(value, wt.Struct) and not type(value)._wp_holds_array_:
        return "constant"  # inlined as its constructor with constant members (frontend.value)
    if isinstance(value, str):
        return "string"
    if isinstance(value, (function_type, Builtin)):
        return "function"
    from .gradwrapper import GradWrapper
    if isinstance(value, GradWrapper):
        return "function"  # wp.grad(f): called as f's gradient (frontend.py)
    if callable(value) and not isinstance(value, type) and getattr(value, "_wp_builtin_", None) and \
            (getattr(value, "__module__", "") or "").startswith("warpd"):
        return "function"  # wp.dot, wp.normalize, ... (pyscope.py)
    raise StaticError(describe_unsupported(value))


def describe_unsupported(value) -> str:
    from .array import array
    from .kernel import Kernel

    if value is None:
        return "None is returned"  # Warp's words
    if isinstance(value, array):
        return "a Warp array cannot be created inside Warp kernels (pass it as an argument)"
    if isinstance(value, Kernel):
        return "it returned a kernel; only functions (@wp.func) can be called from kernels"
    if isinstance(value, wt.Struct):
        # Warp's words: the path names the struct that holds the array member.
        return (f"the returned Warp struct contains a data type that cannot be constructed inside Warp "
                f"kernels: a Warp array cannot be created inside Warp kernels at "
                f"{'.'.join([type(value).__qualname__, *_array_holder_path(value)])} (pass the struct as a "
                f"kernel argument)")
    if isinstance(value, type):
        return (f"it returned the type {getattr(value, '__name__', value)!s}; Warp 1.19 does not accept "
                f"types from wp.static() (use the type directly)")
    return (f"value of type {type(value)} cannot be constructed inside Warp kernels (expected a "
            f"number, bool, vector, matrix, quaternion or transformation, a string for "
            f"print()/wp.printf(), or a Warp function)")


def _array_holder_path(value) -> list:
    """The member names leading from struct `value` to the first struct (itself: []) with
    an array member, in declaration order."""
    from .array import array

    for name in type(value).vars:
        member = getattr(value, name)
        if isinstance(member, array):
            return []
        if isinstance(member, wt.Struct) and getattr(type(member), "_wp_holds_array_", False):
            return [name, *_array_holder_path(member)]
    return []


def fixed_length(t) -> int | None:
    """len() of a value of type t (vector, matrix rows, quaternion, transformation); None for others."""
    if isinstance(t, type) and issubclass(t, wt.Value) and t._shape_:
        return t._shape_[0]
    return None


def substitute_len(expr: ast.expr, lengths: dict) -> ast.expr:
    """expr with ``len(p)`` replaced by lengths[p] (parameters of fixed-length types)."""
    if not lengths:
        return expr

    class Sub(ast.NodeTransformer):
        def visit_Call(self, node):
            if isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1 \
                    and not node.keywords and isinstance(node.args[0], ast.Name) \
                    and node.args[0].id in lengths:
                return ast.copy_location(ast.Constant(lengths[node.args[0].id]), node)
            return self.generic_visit(node)

    return Sub().visit(copy.deepcopy(expr))


def local_names(fn: ast.FunctionDef) -> set:
    """Parameters and every name the function assigns."""
    out = {a.arg for a in fn.args.args}
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
    return out


def resolve(node, ns: dict, locals_: set):
    """The object a Name/Attribute chain denotes in ns; None for locals and unknown names."""
    if isinstance(node, ast.Name):
        if node.id in locals_:
            return None
        if node.id in ns:
            return ns[node.id]
        return getattr(builtins, node.id, None)
    if isinstance(node, ast.Attribute):
        base = resolve(node.value, ns, locals_)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def written_names(node) -> set:
    """Local names a statement may change: assigned, deleted, or an element/member stored."""
    out = set()
    for n in ast.walk(node):
        ctx = getattr(n, "ctx", None)
        if not isinstance(ctx, (ast.Store, ast.Del)):
            continue
        while isinstance(n, (ast.Subscript, ast.Attribute)):
            n = n.value
        if isinstance(n, ast.Name):
            out.add(n.id)
    return out


def loop_jump(node):
    """The first break/continue of node that belongs to the enclosing loop (not a nested one)."""
    if isinstance(node, (ast.Break, ast.Continue)):
        return node
    if isinstance(node, (ast.For, ast.While)):
        return _first_jump(node.orelse)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return None
    return _first_jump(ast.iter_child_nodes(node))


def loop_breaks(body) -> bool:
    """Whether a loop body breaks out of its loop (a break not inside a nested loop)."""
    return any(_breaks(stmt) for stmt in body)


def _breaks(node) -> bool:
    if isinstance(node, ast.Break):
        return True
    if isinstance(node, (ast.For, ast.While)):
        return any(_breaks(s) for s in node.orelse)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        return False
    return any(_breaks(c) for c in ast.iter_child_nodes(node))


def _first_jump(nodes):
    for child in nodes:
        j = loop_jump(child)
        if j is not None:
            return j
    return None


class Declared:
    """A function's source as parsed when it was declared, with the static values found then.

    values maps id(call node) of a ``wp.static`` call to its value; the tree
    (src.node) stays alive as long as this object, so the ids stay valid.
    """

    def __init__(self, src, values: dict, texts: dict | None = None, unresolved: int = 0):
        self.src = src
        self.values = values
        self.texts = texts or {}  # id(call node) -> the static expression's source text
        self.unresolved = unresolved  # wp.static calls left for translation (they need locals)


def declare(func, parse) -> Declared | None:
    """Evaluates func's static expressions that need no local (when it is decorated).

    ``parse(func)`` gives the SourceFunction, kept from now on (as Warp keeps
    the source it read at decoration: a module loaded from a file that is gone
    by the first launch still translates). None when the source cannot be read
    (translation then reports that). Expressions that fail here are evaluated
    again at translation, which reports their errors.
    """
    try:
        src = parse(func)
    except Exception:  # noqa: BLE001 - translation reports unreadable sources
        return None
    if "static" not in src.text:
        return Declared(src, {})
    ns = namespace(func.__globals__, closure_of(func))
    locals_ = local_names(src.node)
    values, texts = {}, {}
    unresolved = 0

    def walk(node, loop_vars):
        nonlocal unresolved
        if isinstance(node, ast.Call) and resolve(node.func, ns, locals_) is static:
            try:
                arg = argument(node)
                if not names_in(arg) & loop_vars:
                    value = evaluate(arg, src.file, ns)
                    check(value, _function_type())
                    values[id(node)] = value
                    texts[id(node)] = ast.unparse(arg)
                    return
            except StaticError:
                pass
            unresolved += 1
        if isinstance(node, ast.For):
            inner = loop_vars | names_in(node.target)
            walk(node.iter, loop_vars)
            for child in node.body + node.orelse:
                walk(child, inner)
            return
        for child in ast.iter_child_nodes(node):
            walk(child, loop_vars)

    for stmt in src.node.body:
        walk(stmt, frozenset())
    return Declared(src, values, texts, unresolved)


def _function_type():
    from .function import Function

    return Function
