"""warpd's benchmark runner (issue 10): everything side by side in one run.

    scripts/bench.sh [--quick] [--large] [--geometry-only] [--json PATH]
    .venv/bin/python bench/run.py [same options]

Starts a private daemon ($WARPD_BIN, default build/bin/warpd) on a Unix
socket and on 127.0.0.1, with a fresh kernel cache, and measures in turn:

  native  bench/native_ref.c built with gcc (vector math and scalar libm),
          in this process on numpy buffers; skipped without gcc. warpd's
          side also loads the loops and calls each in turn with its kernel
          (timing.paired_median_s): the kernel rows' ratios come from those
          pairs, so a drift of the machine's speed hits both sides alike
  warpd   bench/warpd_side.py over the Unix socket (everything) and over TCP
          (round trips, transfers), then once per daemon restart on the same
          cache (disk-cache hits)
  Warp    bench/warp_peer.py with the bench environment's Python (default
          .venv-bench/bin/python, or $BENCH_WARP_PYTHON), where warp-lang is
          installed; skipped when it cannot import warp

  geometry  (issue 27) wp.Mesh BVH builds, the ray-cast example (examples/raycast.py)
          and HashGrid build + query: warpd_side.py's "geometry" mode and
          warp_peer.py --geometry, in alternating rounds (each round a fresh
          process of each side, Warp's kernel cache kept between its rounds),
          so both see the machine in the same minutes; each row takes the
          median over the rounds

Each side runs in a process of its own (warpd and Warp are both imported as
``wp``) and hands back JSON. The rows, their references, ratios and targets
are in bench/rows.py. Prints a markdown table and writes JSON (default
bench/results/latest.json). The machine's load shows in every figure; the
ratios are taken side by side in the same run.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "bench"
sys.path.insert(0, str(REPO / "clients" / "python"))

import native  # noqa: E402
import report  # noqa: E402
import rows  # noqa: E402
from daemon import Daemon, free_port  # noqa: E402

QUICK = dict(sizes=[1 << 20], sincos_threads=1 << 16, sincos_iters=200, repeats=10, sincos_repeats=3,
             launches=2000, graph_launches=1000, graph_replays=3, sync_repeats=200,
             transfer_bytes=16 << 20, transfer_repeats=3, compile_trials=3, hit_repeats=10,
             disk_restarts=2, warp_cold_runs=1, autodiff_size=1 << 18,
             mesh_details=[6, 20], raycast_detail=6, raycast_size=255, hash_points=1 << 16, hash_radius=0.05,
             geo_repeats=5, geo_rounds=1)
FULL = dict(sizes=[1 << 22, 1 << 24], sincos_threads=1 << 18, sincos_iters=200, repeats=20,
            sincos_repeats=5, launches=20000, graph_launches=1000, graph_replays=10, sync_repeats=1000,
            transfer_bytes=256 << 20, transfer_repeats=5, compile_trials=5, hit_repeats=30,
            disk_restarts=3, warp_cold_runs=3, autodiff_size=1 << 20,
            mesh_details=[6, 40], raycast_detail=6, raycast_size=1023, hash_points=1 << 18, hash_radius=0.03,
            geo_repeats=7, geo_rounds=3)
SIDE_TIMEOUT = 1800


def log(msg: str):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def run_side(cmd: list, out: Path, env: dict | None = None) -> dict:
    """Runs one side's process; its JSON, or {"error": ...} with the tail of its output."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=SIDE_TIMEOUT)
    if proc.returncode != 0 or not out.exists():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    for line in proc.stderr.splitlines():
        if line.startswith("bench:"):
            log(line[len("bench:"):].strip())
    return json.loads(out.read_text())


def measure_native(plan: dict, tmp: Path, raw: dict, meta: dict):
    try:
        nat = native.build(tmp)
    except native.NativeUnavailable as e:
        raw["skips"]["native"] = f"no native: {e}"
        log(f"native reference skipped: {e}")
        return
    meta["gcc"] = nat.version
    plan["native"] = nat.built  # warpd's side loads them to interleave them with its kernels
    r = raw["native"] = {}
    from timing import measure

    for n in plan["sizes"]:
        measure(r, f"saxpy_{n}", lambda: nat.saxpy(n, plan["repeats"]))
        measure(r, f"vec3_{n}", lambda: nat.vec3(n, plan["repeats"]))
    for scalar in (False, True):
        measure(r, "sincos_scalar" if scalar else "sincos_simd",
                lambda: nat.sincos(plan["sincos_threads"], plan["sincos_iters"], plan["sincos_repeats"],
                                   scalar))


def measure_warpd(binary: str, plan_file: Path, tmp: Path, raw: dict, plan: dict):
    d = Daemon(binary, tmp / "daemon", tcp_port=free_port())
    side = [sys.executable, str(BENCH / "warpd_side.py")]

    def client(mode, address, name):
        env = dict(os.environ, WARPD_ADDRESS=address, BENCH_TOKEN_FILE=str(d.token_file))
        env.pop("WARPD_TOKEN", None)
        out = tmp / f"{name}.json"
        return run_side(side + [mode, str(plan_file), str(out)], out, env)

    d.start()
    try:
        log("warpd over the Unix socket")
        raw["warpd"] = client("local", d.unix_address, "warpd")
        log("warpd over TCP")
        raw["warpd_remote"] = client("remote", d.tcp_address, "warpd_remote")
    finally:
        d.stop()
    log("warpd disk-cache hits (daemon restarts)")
    raw["warpd_disk_hit"] = []
    for i in range(plan["disk_restarts"]):
        d.start()
        try:
            r = client("disk-hit", d.unix_address, f"disk{i}")
        finally:
            d.stop()
        raw["warpd_disk_hit"].append(r.get("disk_hit", r))


def warp_python() -> str:
    return os.environ.get("BENCH_WARP_PYTHON") or str(REPO / ".venv-bench" / "bin" / "python")


def probe_warp(raw: dict, meta: dict) -> bool:
    """Whether the bench environment's Python imports Warp (its version in meta["warp"]);
    when not, raw["skips"]["warp"] says why."""
    py = warp_python()
    probe = None
    if Path(py).exists():
        probe = subprocess.run([py, "-c", "import warp; print(warp.config.version)"],
                               capture_output=True, text=True)
    if probe is None or probe.returncode != 0:
        why = "no bench venv" if probe is None else "warp-lang not importable"
        raw["skips"]["warp"] = f"no Warp: {why}"
        log(f"Warp skipped: {why} ({py}); scripts/bench.sh installs warp-lang in .venv-bench")
        return False
    meta["warp"] = probe.stdout.strip()
    return True


def measure_warp(plan: dict, plan_file: Path, tmp: Path, raw: dict, meta: dict):
    if not probe_warp(raw, meta):
        return
    py = warp_python()
    peer = [py, str(BENCH / "warp_peer.py"), str(plan_file)]
    env = dict(os.environ, PYTHONPATH=str(BENCH))
    log(f"Warp {meta['warp']} ({py})")
    out = tmp / "warp.json"
    raw["warp"] = run_side(peer + [str(out)], out, env)
    if "error" in raw["warp"] and len(raw["warp"]) == 1:
        raw["skips"]["warp"] = f"no Warp: failed: {raw['warp']['error']}"
        raw["warp"] = None
        return
    raw["warp_cold"] = [raw["warp"].get("cold_compile", {"error": "not measured"})]
    for i in range(1, plan["warp_cold_runs"]):
        out = tmp / f"warp_cold{i}.json"
        r = run_side(peer + [str(out), "--compile-only"], out, env)
        raw["warp_cold"].append(r.get("cold_compile", r))


def measure_geometry(binary: str, plan: dict, plan_file: Path, tmp: Path, raw: dict):
    """The geometry rows, warpd and Warp in alternating rounds (see the module's docstring)."""
    d = Daemon(binary, tmp / "geo-daemon")
    env_warpd = dict(os.environ, WARPD_ADDRESS=d.unix_address, BENCH_TOKEN_FILE=str(d.token_file))
    env_warpd.pop("WARPD_TOKEN", None)
    env_warp = dict(os.environ, PYTHONPATH=str(BENCH))
    with_warp = "warp" not in raw["skips"]
    geo = raw["geometry"] = {"warpd": [], "warp": [] if with_warp else None}
    d.start()
    env_warpd["BENCH_DAEMON_PID"] = str(d.proc.pid)  # its CPU time counts as warpd's (geometry.cpu_seconds)
    try:
        for i in range(plan["geo_rounds"]):
            log(f"geometry round {i + 1}/{plan['geo_rounds']}: warpd")
            out = tmp / f"geo-warpd{i}.json"
            geo["warpd"].append(run_side([sys.executable, str(BENCH / "warpd_side.py"), "geometry", str(plan_file),
                                          str(out)], out, env_warpd))
            if with_warp:
                log(f"geometry round {i + 1}/{plan['geo_rounds']}: Warp")
                out = tmp / f"geo-warp{i}.json"
                geo["warp"].append(run_side([warp_python(), str(BENCH / "warp_peer.py"), str(plan_file), str(out),
                                             "--geometry", str(tmp / "warp-geo-cache")], out, env_warp))
    finally:
        d.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats (a smoke check)")
    ap.add_argument("--large", action="store_true", help="also 2^25 elements for saxpy and vec3")
    ap.add_argument("--geometry-only", action="store_true", help="only the geometry rows (issue 27)")
    ap.add_argument("--json", type=Path, help="where to write JSON (default bench/results/latest.json; "
                                               "with --geometry-only bench/results/geometry.json)")
    args = ap.parse_args()
    if args.json is None:
        args.json = BENCH / "results" / ("geometry.json" if args.geometry_only else "latest.json")
    plan = dict(QUICK if args.quick else FULL)
    if args.large:
        plan["sizes"] = plan["sizes"] + [1 << 25]
    binary = os.environ.get("WARPD_BIN") or str(REPO / "build" / "bin" / "warpd")
    if not Path(binary).exists():
        raise SystemExit(f"bench: no daemon at {binary}; run scripts/setup.sh or set WARPD_BIN")

    meta = {"mode": "quick" if args.quick else "full", "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "host": platform.node(), "cpu": _cpu_model(), "cores": os.cpu_count(),
            "load_before": os.getloadavg(), "warpd": binary, "plan": plan}
    raw = {"skips": {}}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="warpd-bench-") as tmpdir:
        tmp = Path(tmpdir)
        plan_file = tmp / "plan.json"
        if not args.geometry_only:
            log("native reference loops")
            measure_native(plan, tmp, raw, meta)
        plan_file.write_text(json.dumps(plan))
        if not args.geometry_only:
            measure_warpd(binary, plan_file, tmp, raw, plan)
            measure_warp(plan, plan_file, tmp, raw, meta)
        else:
            probe_warp(raw, meta)
        measure_geometry(binary, plan, plan_file, tmp, raw)
    meta["load_after"] = os.getloadavg()
    meta["seconds"] = round(time.perf_counter() - t0, 1)

    table = ([] if args.geometry_only else rows.build(raw, plan)) + rows.geometry(raw, plan)
    print(f"warpd benchmarks ({meta['mode']}, {meta['cores']} cores, load {meta['load_before'][0]:.2f}; "
          f"Warp: {meta.get('warp') or raw['skips'].get('warp')}; "
          f"native: {meta.get('gcc') or raw['skips'].get('native')})\n")
    print(report.markdown(table))
    print(f"\n{report.summary(table)}; {meta['seconds']} s")
    report.write_json(args.json, meta, table, raw)
    print(f"JSON: {args.json}")


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


if __name__ == "__main__":
    main()
