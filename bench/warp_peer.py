"""NVIDIA Warp's CPU backend on the benchmark kernels (a subprocess of bench/run.py).

Run with the bench environment's Python (.venv-bench, where warp-lang is
installed; Warp is never a dependency of warpd):

    python bench/warp_peer.py PLAN.json OUT.json [--compile-only]
    python bench/warp_peer.py PLAN.json OUT.json --geometry CACHE_DIR

The kernel cache is a fresh temporary directory, so the first launch of
saxpy (timed first) compiles it; then saxpy_again, the same kernel as a
module of its own, with the compiler warm. Writes the measurements to OUT.json.
With --geometry, only the geometry rows (bench/geometry.py), with the kernel
cache in CACHE_DIR (kept between the runner's rounds: nothing there is timed
cold).
"""

import json
import os
import sys
import tempfile

os.environ["BENCH_WP"] = "warp"

import warp as wp  # noqa: E402

import kernels as k  # noqa: E402
import workloads as w  # noqa: E402
from timing import measure, write_json  # noqa: E402


def main():
    plan_path, out_path = sys.argv[1], sys.argv[2]
    compile_only = "--compile-only" in sys.argv[3:]
    with open(plan_path) as f:
        plan = json.load(f)
    r = {"version": wp.config.version}
    if "--geometry" in sys.argv[3:]:
        import geometry

        wp.config.kernel_cache_dir = sys.argv[sys.argv.index("--geometry") + 1]
        wp.config.quiet = True
        wp.init()
        geometry.run_geometry_rows(wp, plan, r)
        write_json(out_path, r)
        return
    with tempfile.TemporaryDirectory(prefix="warp-bench-cache-") as cache:
        wp.config.kernel_cache_dir = cache
        wp.config.quiet = True
        wp.init()
        measure(r, "cold_compile", lambda: w.cold_first_launch(wp, k.saxpy))
        measure(r, "cold_compile_again", lambda: w.cold_first_launch(wp, k.saxpy_again))
        if not compile_only:
            run_all(plan, r)
    write_json(out_path, r)


def run_all(plan, r):
    w.run_kernel_rows(wp, k, plan, r)
    w.run_autodiff_rows(wp, k, plan, r)
    measure(r, "launch_sync", lambda: w.launch_sync(wp, k, plan["sync_repeats"]))


if __name__ == "__main__":
    main()
