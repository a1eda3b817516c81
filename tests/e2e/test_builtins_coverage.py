"""Coverage of the kernel language: every builtin of the target list is in the table
and has a value test.

The target list is tests/fixtures/warp_builtins_1.19.json (a copy of the
project's list of Warp 1.19's public builtins): its names outside the groups
below. "In the table" means listed in docs/builtins.md, which is generated
from the table and checked equal to it by builtins_test. "Has a test" means
called inside a kernel (or @wp.func) of a tests/e2e/test_builtins_*.py file
(`wp.name(...)`, `len(...)`/`print(...)`, or the Python operator that maps to
the builtin: `+` is add, `@` is mul, `not` is unot, ...) where its value is
asserted: it reaches an array the test reads back, an expect_eq/expect_near/
expect_neq, or a function's return (asserted_calls); a call whose value goes
nowhere does not count.

Needs no daemon.
"""

import ast
import json
import re
from pathlib import Path

import pytest

E2E = Path(__file__).resolve().parent
REPO = E2E.parents[1]
TARGET = json.loads((REPO / "tests" / "fixtures" / "warp_builtins_1.19.json").read_text())
EXCLUDED_GROUPS = {"Tile Primitives", "Geometry", "Volumes", "Textures"}
TARGET_NAMES = sorted(k for k, v in TARGET.items() if k != "_about" and v["group"] not in EXCLUDED_GROUPS)

BINOPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.MatMult: "mul", ast.Div: "div",
          ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.LShift: "lshift", ast.RShift: "rshift",
          ast.BitAnd: "bit_and", ast.BitOr: "bit_or", ast.BitXor: "bit_xor"}
UNARYOPS = {ast.USub: "neg", ast.UAdd: "pos", ast.Invert: "invert", ast.Not: "unot"}
PLAIN_CALLS = {"len", "print"}  # builtins called without the wp. prefix


def table_names():
    doc = (REPO / "docs" / "builtins.md").read_text()
    return set(re.findall(r"^\| `([A-Za-z_0-9]+)` \|", doc, re.M))


def _is_kernel(fn: ast.FunctionDef) -> bool:
    return any("kernel" in ast.unparse(d) or "specialize" in ast.unparse(d) for d in fn.decorator_list)


ASSERTIONS = {"expect_eq", "expect_neq", "expect_near"}
# Statements whose effect the tests observe by themselves (printed text, a no-op).
OUTPUTS = {"print", "printf", "breakpoint"}
STORES = {"atomic_add", "atomic_sub", "atomic_min", "atomic_max", "atomic_and", "atomic_or", "atomic_xor",
          "atomic_exch", "atomic_cas"}


def _builtin_names(node):
    """The builtin names one AST node stands for (a wp.* call, len/print, an operator)."""
    if isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "wp":
            return [f.attr]
        if isinstance(f, ast.Name) and f.id in PLAIN_CALLS:
            return [f.id]
    elif isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
        return [BINOPS[type(node.op)]]
    elif isinstance(node, ast.AugAssign) and type(node.op) in BINOPS:
        return [BINOPS[type(node.op)]]
    elif isinstance(node, ast.UnaryOp) and type(node.op) in UNARYOPS:
        return [UNARYOPS[type(node.op)]]
    return []


def _names_in(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _root_names(target):
    """The variables an assignment target writes (a, a[i].x, (a, b))."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return {n for t in target.elts for n in _root_names(t)}
    while isinstance(target, (ast.Subscript, ast.Attribute)):
        target = target.value
    return {target.id} if isinstance(target, ast.Name) else set()


def asserted_calls(fn: ast.FunctionDef, params: set):
    """The builtin names whose values a kernel's outputs or assertions depend on.

    A value is asserted when it reaches an array parameter (a store, an atomic), an
    expect_eq/expect_neq/expect_near, or a return (of a helper function), directly or
    through locals, or decides (as an if/while condition) whether such a statement runs.
    A call whose result goes nowhere does not count: the coverage test counts a builtin
    only where a test can see its value.
    """
    stmts = [n for stmt in fn.body for n in ast.walk(stmt) if isinstance(n, ast.stmt)]
    live = set(params)  # names whose values are observed
    live_exprs = []
    changed = True

    def sink_stmt(st):
        """Whether `st` itself is observed (stores into a live name, asserts, returns)."""
        if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            return any(_root_names(t) & live for t in targets)
        if isinstance(st, ast.Return):
            return True
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
            names = _builtin_names(st.value)
            if names and (names[0] in ASSERTIONS or names[0] in STORES or names[0] in OUTPUTS):
                return True
            return any(isinstance(a, ast.Name) and a.id in live for a in st.value.args)  # output arguments
        return False

    def observed_body(st):
        return any(sink_stmt(s) for b in (getattr(st, "body", []), getattr(st, "orelse", []))
                   for inner in b for s in ast.walk(inner) if isinstance(s, ast.stmt))

    while changed:
        changed = False
        live_exprs = []
        for st in stmts:
            exprs = []
            if sink_stmt(st):
                if isinstance(st, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    exprs.append(st.value)
                    targets = st.targets if isinstance(st, ast.Assign) else [st.target]
                    exprs += [t for t in targets if isinstance(t, ast.Subscript)]  # the indices
                    if isinstance(st, ast.AugAssign):
                        exprs.append(st)
                elif st.value is not None:
                    exprs.append(st.value)
            if isinstance(st, (ast.If, ast.While)) and observed_body(st):
                exprs.append(st.test)
            if isinstance(st, ast.For) and observed_body(st):
                exprs.append(st.iter)
            for e in exprs:
                if e is None:
                    continue
                live_exprs.append(e)
                new = _names_in(e) - live
                if new:
                    live |= new
                    changed = True
    found = set()
    for e in live_exprs:
        for node in ast.walk(e):
            found.update(_builtin_names(node))
    return found


def names_used_in_kernels():
    """name -> the test files whose kernels (or the @wp.func helpers they call) assert it."""
    found = {}
    for path in sorted(E2E.glob("test_builtins_*.py")):
        if path.name == Path(__file__).name:
            continue
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef):
                continue
            is_func = any("func" in ast.unparse(d) for d in fn.decorator_list)
            if not (_is_kernel(fn) or is_func):
                continue
            params = {a.arg for a in fn.args.args if a.annotation is not None and "array" in ast.unparse(a.annotation)}
            for n in asserted_calls(fn, params):
                found.setdefault(n, set()).add(path.name)
    return found


def test_target_list_is_complete():
    assert len(TARGET_NAMES) == 175, "the target list changed: update this test's expectations"


def test_every_target_builtin_is_in_the_table():
    missing = [n for n in TARGET_NAMES if n not in table_names()]
    assert not missing, f"builtins of Warp 1.19 missing from the table (docs/builtins.md): {missing}"


def test_every_target_builtin_has_a_value_test():
    found = names_used_in_kernels()
    untested = [n for n in TARGET_NAMES if n not in found]
    assert not untested, (f"builtins without a test in a kernel of tests/e2e/test_builtins_*.py: {untested} "
                          f"({len(TARGET_NAMES) - len(untested)} of {len(TARGET_NAMES)} covered)")


@pytest.mark.parametrize("group", sorted({TARGET[n]["group"] for n in TARGET_NAMES}))
def test_group_coverage(group):
    """The same check per documentation group, so a report shows where a gap is."""
    found = names_used_in_kernels()
    names = [n for n in TARGET_NAMES if TARGET[n]["group"] == group]
    assert all(n in found for n in names), [n for n in names if n not in found]


def test_only_calls_whose_values_are_observed_count():
    src = '''
@wp.kernel
def k(a: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    unused = wp.sin(a[i])              # goes nowhere: not counted
    wp.cos(a[i])                       # a bare call: not counted
    x = wp.sqrt(a[i])
    y = x + 1.0                        # add, through locals into out
    if wp.isnan(y):                    # decides whether a store runs
        out[i] = 0.0
    u = wp.mat33()
    s = wp.vec3()
    v = wp.mat33()
    wp.svd3(wp.identity(n=3, dtype=float), u, s, v)   # outputs reach out through s
    out[i] = y * s[0]
    wp.expect_eq(wp.floor(1.5), 1.0)
    wp.atomic_add(out, 0, wp.exp(a[i]))
    z = wp.tan(a[i])
    z = wp.log(a[i])                   # both assignments to z reach the store below
    out[0] = z
'''
    fn = ast.parse(src).body[0]
    got = asserted_calls(fn, {"a", "out"})
    assert {"sqrt", "add", "isnan", "svd3", "identity", "mul", "expect_eq", "floor", "atomic_add", "exp",
            "tan", "log"} <= got, got
    assert "sin" not in got and "cos" not in got
