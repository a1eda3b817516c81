"""Coverage of the kernel language: every builtin of the target list is in the table
and has a value test.

The target list is tests/fixtures/warp_builtins_1.19.json (a copy of the
project's list of Warp 1.19's public builtins): its names outside the groups
below. "In the table" means listed in docs/builtins.md, which is generated
from the table and checked equal to it by builtins_test. "Has a test" means
called inside a kernel of a tests/e2e/test_builtins_*.py file: `wp.name(...)`,
`len(...)`/`print(...)`, or the Python operator that maps to the builtin (`+`
is add, `@` is mul, `not` is unot, ...). A call in an xfail test counts: it
states the expected behaviour of a known gap.

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


def names_used_in_kernels():
    """name -> the test files whose kernels use it."""
    found = {}
    for path in sorted(E2E.glob("test_builtins_*.py")):
        if path.name == Path(__file__).name:
            continue
        for fn in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(fn, ast.FunctionDef) and _is_kernel(fn)):
                continue
            for node in (n for stmt in fn.body for n in ast.walk(stmt)):  # not the annotations
                names = []
                if isinstance(node, ast.Call):
                    f = node.func
                    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "wp":
                        names.append(f.attr)
                    elif isinstance(f, ast.Name) and f.id in PLAIN_CALLS:
                        names.append(f.id)
                elif isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
                    names.append(BINOPS[type(node.op)])
                elif isinstance(node, ast.UnaryOp) and type(node.op) in UNARYOPS:
                    names.append(UNARYOPS[type(node.op)])
                for n in names:
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
