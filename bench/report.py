"""Rows of the benchmark report: a value, its reference, their ratio, the
issue's target and whether it was met; printed as a markdown table and
written as JSON.

A target applies to the row's ratio or to its value (``Target.on``). A row
whose measurement failed carries the error and no verdict; a row whose
reference is missing (Warp or gcc not available) is "skipped" when its target
needs the reference, and judged on its value otherwise.
"""

import json
import operator
from dataclasses import asdict, dataclass, field
from pathlib import Path

_OPS = {">=": operator.ge, "<=": operator.le}


@dataclass
class Target:
    on: str         # "ratio" or "value"
    op: str         # ">=" or "<="
    threshold: float

    def met(self, value, ratio) -> bool | None:
        x = ratio if self.on == "ratio" else value
        return None if x is None else _OPS[self.op](x, self.threshold)

    def text(self, unit: str) -> str:
        if self.on == "ratio":
            return f"ratio {self.op} {self.threshold:g}"
        return f"{self.op} {fmt(self.threshold)} {unit}"


@dataclass
class Row:
    name: str
    unit: str
    value: float | None = None
    ref: float | None = None
    ref_name: str = ""
    ratio: float | None = None
    ratio_name: str = ""      # how the ratio is taken, e.g. "native/warpd"
    target: Target | None = None
    result: str = ""         # pass, MISS, error, skipped, info
    note: str = ""
    error: str = ""
    skip: str = ""            # why the reference is missing
    extra: dict = field(default_factory=dict)

    def judge(self):
        if self.error:
            self.result = "error"
        elif self.target is None:
            self.result = "info"
        elif self.target.on == "ratio" and self.ratio is None:
            self.result = "skipped"
        else:
            met = self.target.met(self.value, self.ratio)
            self.result = "skipped" if met is None else ("pass" if met else "MISS")
        return self


def fmt(x) -> str:
    if x is None:
        return "-"
    ax = abs(x)
    if ax >= 1e5:
        return f"{x:,.0f}"
    if ax >= 100:
        return f"{x:.0f}"
    if ax >= 10:
        return f"{x:.1f}"
    if ax >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def markdown(rows: list[Row]) -> str:
    lines = ["| row | warpd | reference | ratio | target | result |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        value = f"error: {r.error}" if r.error else f"{fmt(r.value)} {r.unit}"
        if r.ref is not None:
            ref = f"{fmt(r.ref)} {r.unit} ({r.ref_name})"
        else:
            ref = f"- ({r.skip})" if r.skip else "-"
        ratio = f"{r.ratio:.2f} ({r.ratio_name})" if r.ratio is not None else "-"
        target = r.target.text(r.unit) if r.target else "-"
        lines.append(f"| {r.name} | {value} | {ref} | {ratio} | {target} | {r.result} |")
    notes = [f"- {r.name}: {r.note}" for r in rows if r.note]
    if notes:
        lines += ["", "Notes:", *notes]
    return "\n".join(lines)


def summary(rows: list[Row]) -> str:
    counts = {}
    for r in rows:
        counts[r.result] = counts.get(r.result, 0) + 1
    return ", ".join(f"{v} {k}" for k, v in sorted(counts.items()))


def write_json(path: Path, meta: dict, rows: list[Row], raw: dict):
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"meta": meta, "rows": [asdict(r) for r in rows], "raw": raw}
    path.write_text(json.dumps(data, indent=1) + "\n")
