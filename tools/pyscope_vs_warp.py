"""Compares warpd's Python-scope builtins with warp-lang's, call by call.

Not a test (the tests never import warp-lang); a report for people:

    # each interpreter evaluates the calls of tests/e2e/pyscope_cases.py:
    ~/.cache/warp-suite-1.19/venv/bin/python tools/pyscope_vs_warp.py dump warp /tmp/warp.json
    .venv/bin/python tools/pyscope_vs_warp.py dump warpd /tmp/warpd.json
    python3 tools/pyscope_vs_warp.py compare /tmp/warp.json /tmp/warpd.json

`dump` writes, per call, the result's type name and components (or the error);
`compare` lists the calls whose values differ beyond the dtype's tolerance,
whose result types differ, or that only one side accepts. Integer division by
zero is left out: it kills a warp-lang process (SIGFPE).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "e2e"))

INT_NAMES = {"int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "int"}


def _encode(r):
    """(type name, flat list of numbers) of a result."""
    if isinstance(r, tuple):
        parts = [_encode(x) for x in r]
        return "tuple(" + ", ".join(p[0] for p in parts) + ")", [x for p in parts for x in p[1]]
    name = type(r).__name__
    if isinstance(r, (bool, int, float)):
        return name, [r]
    if hasattr(r, "value") and not hasattr(r, "__len__"):
        return name, [r.value]
    raw = np.asarray(r)
    st = getattr(type(r), "_wp_scalar_type_", None)
    if getattr(st, "__name__", "") == "float16" and raw.dtype == np.uint16:
        raw = raw.view(np.float16)  # warp-lang keeps half components as their bits
    return name, raw.astype(np.float64).reshape(-1).tolist()


def _divides_by_int_zero(case) -> bool:
    if case.name not in ("div", "mod", "floordiv") or len(case.args) != 2:
        return False
    b = case.args[1]
    return type(b).__name__ in INT_NAMES and int(getattr(b, "value", b)) == 0


def dump(module_name, out):
    wp = importlib.import_module(module_name)
    if module_name == "warp":
        wp.config.quiet = True
    wp.init()
    from pyscope_cases import make_cases

    rows = []
    for case in make_cases(wp):
        row = {"call": repr(case), "name": case.name}
        if _divides_by_int_zero(case):
            row["skipped"] = True
        else:
            try:
                fn = getattr(wp, case.name)
                if case.name.startswith("transform_set_"):
                    x = type(case.args[0])(case.args[0])
                    fn(x, *case.args[1:])
                    r = x
                else:
                    r = fn(*case.args)
                row["type"], row["value"] = _encode(r)
            except Exception as e:  # noqa: BLE001 - the error is the result
                row["error"] = f"{type(e).__name__}: {str(e)[:160]}"
        rows.append(row)
    Path(out).write_text(json.dumps(rows, default=float))


def _tolerance(call):
    if "h(" in call or "float16" in call:
        return 2e-3
    if "d(" in call or "float64" in call:
        return 1e-12
    return 2e-6


def compare(warp_json, warpd_json):
    a, b = json.loads(Path(warp_json).read_text()), json.loads(Path(warpd_json).read_text())
    assert len(a) == len(b)
    value_diffs, type_diffs, only_warpd, only_warp = {}, {}, {}, {}
    for x, y in zip(a, b):
        if x.get("skipped"):
            continue
        name = x["name"]
        if "error" in x and "error" not in y:
            only_warpd.setdefault(name, []).append(f"{x['call']}: warp {x['error']}")
            continue
        if "error" in y and "error" not in x:
            only_warp.setdefault(name, []).append(f"{y['call']}: warpd {y['error']}")
            continue
        if "error" in x:
            continue
        if x["type"] != y["type"] and not ("_t" in x["type"]):
            type_diffs.setdefault(name, []).append(f"{x['call']}: warp {x['type']}, warpd {y['type']}")
        u, v = np.array(x["value"], dtype=np.float64), np.array(y["value"], dtype=np.float64)
        if u.shape != v.shape:
            value_diffs.setdefault(name, []).append(f"{x['call']}: shapes {u.shape} {v.shape}")
            continue
        tol = _tolerance(x["call"])
        ok = np.isclose(u, v, rtol=tol, atol=tol, equal_nan=True)
        if not ok.all():
            worst = float(np.nanmax(np.abs(u - v)))
            value_diffs.setdefault(name, []).append(f"{x['call']}: warp {u.tolist()} warpd {v.tolist()} "
                                                    f"(max diff {worst:.3g})")
    for title, table in (("values differ", value_diffs), ("result types differ", type_diffs),
                         ("warpd accepts, warp-lang raises", only_warpd),
                         ("warp-lang accepts, warpd raises", only_warp)):
        print(f"== {title}: {len(table)} builtins")
        for name in sorted(table):
            rows = table[name]
            print(f"  {name} ({len(rows)}): {rows[0]}")
            for r in rows[1:3]:
                print(f"      {r}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "dump":
        dump(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
