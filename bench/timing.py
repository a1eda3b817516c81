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


def paired_median_s(fn, ref, repeats: int, warmup: int = 2) -> tuple[float, float]:
    """Median wall times of fn() and of ref() in seconds, `repeats` calls
    each, taken in turns of about a quarter of them (the order swapped every
    round): both sides see the machine in the same moments, so their ratio
    holds where the machine's speed drifts between two separate blocks. A
    turn starts with one call that is not timed (the first `warmup` calls on
    the first turn), so that each side's timed calls find its data where its
    own previous call left it (in cache, for data that fits), as in a block."""
    block = max(1, repeats // 4)
    a, b = [], []
    first = True
    while len(a) < repeats:
        n = min(block, repeats - len(a))
        turns = ((fn, a), (ref, b)) if len(a) // block % 2 == 0 else ((ref, b), (fn, a))
        for f, out in turns:
            for _ in range(warmup if first else 1):
                f()
            for _ in range(n):
                t0 = time.perf_counter()
                f()
                out.append(time.perf_counter() - t0)
        first = False
    return statistics.median(a), statistics.median(b)


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
