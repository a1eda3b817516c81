"""The client's names for builtins are the server's.

Every Python object the front end turns into a builtin callee (a ``wp.X``
attribute, a type used as a constructor, Python's ``float``/``int``/``abs``...)
must name an entry of the builtin table; docs/builtins.md is generated from
that table (a C++ test keeps them equal). No daemon needed.
"""

import builtins
import re
from pathlib import Path

import warpd
import warpd.types
from warpd import frontend

REPO = Path(__file__).resolve().parents[2]


def table_names() -> set:
    text = (REPO / "docs" / "builtins.md").read_text()
    return set(re.findall(r"^\| `([A-Za-z_][A-Za-z0-9_]*)` \|", text, flags=re.M))


def client_callees() -> dict:
    """{builtin name: where it came from} for everything the client exports."""
    found = {}
    for mod, prefix in ((warpd, "wp"), (warpd.types, "wp.types")):
        for attr in dir(mod):
            if attr.startswith("_"):
                continue
            obj = getattr(mod, attr)
            try:
                name = frontend.builtin_name(obj)
            except TypeError:  # unhashable values
                continue
            if name is not None:
                found.setdefault(name, f"{prefix}.{attr}")
    for obj in vars(builtins).values():
        try:
            name = frontend.builtin_name(obj)
        except TypeError:
            continue
        if name is not None and callable(obj):
            found.setdefault(name, f"builtins.{getattr(obj, '__name__', obj)}")
    return found


# Python builtins the front end maps but kernels may not call are caught by
# the server with "unknown function" plus a suggestion; they are not
# callees the client promises. Python's own builtins that are not kernel
# builtins: only those the front end resolves to themselves are checked.
_PYTHON_ONLY = {name for name in dir(builtins)}


def test_every_client_callee_is_in_the_table():
    names = table_names()
    assert len(names) > 250, "docs/builtins.md looks truncated"
    missing = {n: where for n, where in client_callees().items()
               if n not in names and not (where.startswith("builtins.") and n in _PYTHON_ONLY)}
    assert not missing, f"client names with no builtin: {missing}"


def test_python_builtins_the_table_knows_are_mapped():
    names = table_names()
    callees = client_callees()
    for py, wp_name in ((float, "float32"), (int, "int32"), (bool, "bool"), (abs, "abs"),
                        (min, "min"), (max, "max"), (round, "round"), (print, "print"),
                        (len, "len"), (range, "range")):
        assert frontend.builtin_name(py) == wp_name, py
        assert wp_name in names, wp_name
        assert wp_name in callees


def test_value_types_construct_through_table_names():
    names = table_names()
    for t in ("vec2", "vec3", "vec4", "vec3d", "vec4h", "vec2i", "vec3ub", "mat22", "mat33", "mat44",
              "mat33d", "quat", "quatd", "transform", "transformh", "spatial_vector", "spatial_matrix"):
        assert t in names, t
        obj = getattr(warpd, t, None)
        if obj is not None:
            assert frontend.builtin_name(obj) == t, t
