"""Timing helpers shared by every side of bench/run.py (standard library only:
the Warp peer imports this too, from its own virtual environment)."""

import json
import statistics
import sys
import time


def median_s(fn, repeats: int, warmup: int = 2) -> float:
    """Median wall time of fn() in seconds, over `repeats` calls after `warmup` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def once_s(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def measure(results: dict, key: str, fn):
    """results[key] = fn(), or {"error": ...} when it raises: one unsupported
    feature costs its row, not the run."""
    try:
        results[key] = fn()
    except Exception as e:  # noqa: BLE001 - reported in the row
        results[key] = {"error": f"{type(e).__name__}: {e}"}
        print(f"bench: {key}: {type(e).__name__}: {e}", file=sys.stderr)


def write_json(path: str, data: dict):
    with open(path, "w") as f:
        json.dump(data, f, indent=1)
