"""``@wp.func_grad`` and ``@wp.func_replay``: user-written adjoints and replays of a @wp.func.

A custom gradient ``g(x, y, adj_ret)`` of ``f(x, y)`` adds to ``wp.adjoint[x]`` and
``wp.adjoint[y]``. It reaches the daemon as an ordinary function, translated from
a rewritten copy of its tree: each ``wp.adjoint[p]`` (and ``wp.adjoint[p.member]``,
``wp.adjoint[p][i]``) becomes an accumulator parameter appended after g's own
parameters, one per parameter of f with f's type, and g returns the accumulators
of f's non-array parameters (one value, or a tuple for several). The adjoint codegen calls it with zeroed
accumulators in place of f's automatic adjoint and adds what it returns to the
arguments' adjoints (compiler/codegen/adjoint.cc). A custom replay ``r`` (f's
parameters) runs instead of f when a backward pass recomputes f's result.

Both are sent only with a module's backward pass (module.py), and named on f's IR
(``Function.custom_grad``, ``Function.custom_replay``). An array parameter's
accumulator is the array's gradient itself: ``wp.adjoint[a][i] += v`` adds into it.
"""

from __future__ import annotations

import ast
import copy
import types as pytypes

from . import frontend
from .array import array
from .errors import CompileError
from .v1 import ir_pb2

# Accumulator parameter names: a suffix no Python identifier a user writes is likely to end in.
_ACC_SUFFIX = "__wpd_adj"


def _is_adjoint(node, globals_) -> bool:
    """Whether `node` is the expression ``wp.adjoint`` (any alias of the module)."""
    if not (isinstance(node, ast.Attribute) and node.attr == "adjoint" and isinstance(node.value, ast.Name)):
        return False
    mod = globals_.get(node.value.id)
    return getattr(mod, "__name__", "").split(".")[0] in ("warpd", "warp")


class _Rewrite(ast.NodeTransformer):
    def __init__(self, acc: dict, globals_, file, line_base):
        self.acc = acc
        self.globals = globals_
        self.file = file
        self.line_base = line_base

    def visit_Subscript(self, node):
        if not _is_adjoint(node.value, self.globals):
            return self.generic_visit(node)
        target = node.slice
        root = target
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if not isinstance(root, ast.Name) or root.id not in self.acc:
            line = self.line_base + getattr(node, "lineno", 0)
            raise CompileError(f"{self.file}:{line}:{getattr(node, 'col_offset', 0) + 1}: error: wp.adjoint[...] "
                               f"takes a parameter of the function being differentiated (or a member or "
                               f"component of one)")
        target = copy.deepcopy(target)
        r = target
        if isinstance(r, ast.Name):
            return ast.copy_location(ast.Name(id=self.acc[r.id], ctx=node.ctx), node)
        while isinstance(r.value, (ast.Attribute, ast.Subscript)):
            r = r.value
        r.value = ast.copy_location(ast.Name(id=self.acc[r.value.id], ctx=ast.Load()), r.value)
        target.ctx = node.ctx
        return ast.copy_location(target, node)

    def visit_Return(self, node):
        line = self.line_base + node.lineno
        raise CompileError(f"{self.file}:{line}:{node.col_offset + 1}: error: a wp.func_grad function adds to "
                           f"wp.adjoint[...] and returns nothing")


def translate_grad(forward_func, grad_fn, ir_name: str, function_type):
    """(ir_pb2.Function, deps) of custom gradient `grad_fn` for the Python function `forward_func`."""
    src = frontend.SourceFunction(grad_fn)
    node = copy.deepcopy(src.node)
    forward_params = forward_func.__code__.co_varnames[:forward_func.__code__.co_argcount]
    own = [a.arg for a in node.args.args]
    n = len(forward_params)
    where = f"{src.file}:{src.line_base + node.lineno}:1"
    if len(own) < n:
        raise CompileError(f"{where}: error: wp.func_grad function '{grad_fn.__name__}' takes the parameters of "
                           f"'{forward_func.__name__}' ({', '.join(forward_params)}) then the adjoints of its results")
    acc = {own[k]: own[k] + _ACC_SUFFIX for k in range(n)}
    node = _Rewrite(acc, grad_fn.__globals__, src.file, src.line_base).visit(node)
    for k in range(n):
        node.args.args.append(ast.arg(arg=acc[own[k]]))
    # The same function with the accumulators' annotations: f's parameter types.
    annotations = dict(getattr(grad_fn, "__annotations__", {}))
    forward_annotations = getattr(forward_func, "__annotations__", {})
    for k in range(n):
        if forward_params[k] not in forward_annotations:
            raise CompileError(f"{where}: error: '{forward_func.__name__}' parameter '{forward_params[k]}' has no "
                               f"annotation")
        annotations[acc[own[k]]] = forward_annotations[forward_params[k]]
    # An array's accumulator is its gradient array itself (written in place); the
    # others are returned.
    result = [ast.Name(id=acc[own[k]], ctx=ast.Load()) for k in range(n)
              if not isinstance(annotations[acc[own[k]]], array)]
    if result:
        value = result[0] if len(result) == 1 else ast.Tuple(elts=result, ctx=ast.Load())
        ret = ast.Return(value=value)
        last = node.body[-1] if node.body else node
        for x in (ret, value, *result):
            ast.copy_location(x, last)
        node.body.append(ret)
    ast.fix_missing_locations(node)
    fake = pytypes.FunctionType(grad_fn.__code__, grad_fn.__globals__, grad_fn.__name__, grad_fn.__defaults__,
                                grad_fn.__closure__)
    fake.__annotations__ = annotations
    fake.__qualname__ = grad_fn.__qualname__
    fake.__module__ = grad_fn.__module__
    t = frontend.Translator(fake, ir_pb2.FUNCTION_FUNC, ir_name, function_type)
    rewritten = copy.copy(src)
    rewritten.node = node
    t.src = rewritten
    return t.translate(), t.deps


def translate_replay(replay_fn, ir_name: str, function_type):
    """(ir_pb2.Function, deps) of custom replay `replay_fn` (an ordinary function of f's parameters)."""
    ir, deps, _again = frontend.translate(replay_fn, ir_pb2.FUNCTION_FUNC, ir_name, function_type)
    return ir, deps
