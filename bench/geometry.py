"""Geometry rows (issue 27): mesh BVH builds, the ray-cast example's rays/s, HashGrid build + query.

Written once against the Warp API like bench/workloads.py: each function takes
the package as ``wp`` (warpd or warp) and returns plain numbers for JSON.

The ray casting is examples/raycast.py itself: its scene (numpy) and its
``render`` kernel, loaded from the example's file. The example says
``import warpd as wp``; on Warp's side the loader makes that name refer to
Warp for the duration of the import, so both sides run the very same kernel
source.
"""

import importlib
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

from timing import median_s

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "raycast.py"

# The package the neighbour-count kernel is declared with (as in bench/kernels.py).
_wp = importlib.import_module(os.environ.get("BENCH_WP", "warpd"))


@_wp.kernel(module="unique")
def count_neighbors(grid: _wp.uint64, points: _wp.array(dtype=_wp.vec3), radius: float,
                    counts: _wp.array(dtype=int)):
    tid = _wp.tid()
    i = _wp.hash_grid_point_id(grid, tid)
    p = points[i]
    c = int(0)
    for j in _wp.hash_grid_query(grid, p, radius):
        if _wp.length(p - points[j]) <= radius:
            c += 1
    counts[i] = c


def cpu_seconds() -> float:
    """CPU time used so far by this process, plus the daemon's when $BENCH_DAEMON_PID names it
    (warpd's side: the kernels run there). A load-independent measure of the work done: on a
    busy machine the wall times of both sides stretch by however much CPU they got."""
    total = time.process_time()
    pid = os.environ.get("BENCH_DAEMON_PID")
    if pid:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def timed(fn, repeats: int, warmup: int = 1) -> tuple[float, float]:
    """(median wall seconds, mean CPU seconds) of fn() over `repeats` calls after `warmup`."""
    for _ in range(warmup):
        fn()
    c0 = cpu_seconds()
    t = median_s(fn, repeats, warmup=0)
    return t, (cpu_seconds() - c0) / repeats


def load_raycast(wp):
    """examples/raycast.py as a module whose ``wp`` is the given package."""
    spec = importlib.util.spec_from_file_location(f"bench_raycast_{wp.__name__}", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get("warpd")
    sys.modules["warpd"] = wp
    try:
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del sys.modules["warpd"]
        else:
            sys.modules["warpd"] = saved
    return module


def _mesh_arrays(wp, rc, detail):
    points_np, indices_np, normals_np, sphere_faces = rc.scene(detail)
    return (wp.array(points_np, dtype=wp.vec3, device="cpu"), wp.array(indices_np, dtype=wp.int32, device="cpu"),
            wp.array(normals_np, dtype=wp.vec3, device="cpu"), sphere_faces, len(indices_np) // 3)


def mesh_build(wp, rc, detail: int, repeats: int) -> dict:
    """wp.Mesh(points, indices) + synchronize (the SAH BVH build), median ms; then refit."""
    points, indices, _normals, _sf, tris = _mesh_arrays(wp, rc, detail)
    wp.synchronize()
    held = []

    def build():
        held.clear()  # the previous mesh is freed before the next is built
        held.append(wp.Mesh(points=points, indices=indices))
        wp.synchronize()

    t_build, cpu_build = timed(build, repeats)
    mesh = held[0]

    def refit():
        mesh.refit()
        wp.synchronize()

    t_refit = median_s(refit, repeats, warmup=1)
    return {"triangles": tris, "ms": t_build * 1e3, "cpu_ms": cpu_build * 1e3, "refit_ms": t_refit * 1e3}


def raycast(wp, rc, detail: int, size: int, repeats: int) -> dict:
    """The example's render kernel over size x size pixels: launch + sync, median; rays/s."""
    points, indices, normals, sphere_faces, tris = _mesh_arrays(wp, rc, detail)
    mesh = wp.Mesh(points=points, indices=indices)
    depth = wp.zeros((size, size), dtype=float, device="cpu")
    color = wp.zeros((size, size), dtype=wp.vec3, device="cpu")
    light = np.array([-0.5, 0.8, 0.6]) / np.linalg.norm([-0.5, 0.8, 0.6])
    inputs = [mesh.id, normals, wp.vec3(*rc.CAMERA_POS), size, size, float(np.tan(rc.FOV_Y / 2)),
              wp.vec3(*light), sphere_faces, depth, color]

    def run():
        wp.launch(rc.render, dim=(size, size), inputs=inputs, device="cpu")
        wp.synchronize()

    t, cpu = timed(run, repeats)
    d = depth.numpy()
    hit = np.isfinite(d)
    if size % 2 == 1 and abs(d[size // 2, size // 2] - (rc.CAMERA_POS[2] - rc.SPHERE_RADIUS)) > 1e-5:
        raise AssertionError(f"raycast: centre depth {d[size // 2, size // 2]}, expected 2.9")
    return {"triangles": tris, "rays": size * size, "ms": t * 1e3, "cpu_ms": cpu * 1e3, "rays_per_s": size * size / t,
            "hits": int(hit.sum()), "depth_sum": float(d[hit].astype(np.float64).sum())}


def hash_grid(wp, n: int, radius: float, repeats: int) -> dict:
    """HashGrid.build + sync over n random points, median ms; then a kernel counting each
    point's neighbours within radius (launch + sync, median ms), checked against brute force
    for a sample of points."""
    pts = np.random.default_rng(5).uniform(0.0, 1.0, (n, 3)).astype(np.float32)
    points = wp.array(pts, dtype=wp.vec3, device="cpu")
    counts = wp.zeros(n, dtype=int, device="cpu")
    grid = wp.HashGrid(128, 128, 128, device="cpu")

    def build():
        grid.build(points, radius)
        wp.synchronize()

    t_build, cpu_build = timed(build, repeats)

    def query():
        wp.launch(count_neighbors, dim=n, inputs=[grid.id, points, radius, counts], device="cpu")
        wp.synchronize()

    t_query, cpu_query = timed(query, repeats)
    got = counts.numpy()
    sample = np.random.default_rng(6).choice(n, 64, replace=False)
    d = np.linalg.norm(pts[sample, None, :].astype(np.float64) - pts[None, :, :], axis=-1)
    want = (d <= radius).sum(axis=1)
    edge = (np.abs(d - radius) < 1e-6).sum(axis=1)
    if (np.abs(got[sample] - want) > edge).any():
        raise AssertionError("hash grid: neighbour counts differ from brute force")
    return {"points": n, "build_ms": t_build * 1e3, "query_ms": t_query * 1e3, "build_cpu_ms": cpu_build * 1e3,
            "query_cpu_ms": cpu_query * 1e3,
            "mean_neighbors": float(got.mean()), "count_sum": int(got.sum())}


def run_geometry_rows(wp, plan: dict, r: dict):
    from timing import measure

    rc = load_raycast(wp)
    reps = plan["geo_repeats"]
    for detail in plan["mesh_details"]:
        measure(r, f"mesh_build_{detail}", lambda: mesh_build(wp, rc, detail, reps))
    measure(r, "raycast", lambda: raycast(wp, rc, plan["raycast_detail"], plan["raycast_size"], reps))
    measure(r, "hash_grid", lambda: hash_grid(wp, plan["hash_points"], plan["hash_radius"], reps))
